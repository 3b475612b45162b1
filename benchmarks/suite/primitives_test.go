package suite

import (
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/fanout"
	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// The primitives count requests (ops/s), not pairs: a kv cycle is two
// requests on both servers, so ops/s compare directly.
func TestPrimitiveTablesCountOps(t *testing.T) {
	recs := []Record{
		{Target: "ng", Workload: "kv", Conns: 50, Depth: 16, Rep: 1, PairsPerS: 300, ReqPerS: 600, P99Ns: 2e6, CPUPerPairNs: 2000, CPUPerReqNs: 1000},
		{Target: "redis", Workload: "kv", Conns: 50, Depth: 16, Rep: 1, PairsPerS: 200, ReqPerS: 400, P99Ns: 3e6, CPUPerPairNs: 3000, CPUPerReqNs: 1500},
	}
	md := string((&Report{Title: "t", Subject: "ng", Targets: []string{"ng", "redis"}, Records: recs}).Markdown())
	for _, want := range []string{"| conns | ng ops/s | ng p99 | redis ops/s | redis p99 | ng/redis |", "| 50 | 600 | 2.00 ms | 400 | 3.00 ms | 1.50× |",
		"Server CPU per request", "| 50 | 1.00 | 1.50 |", "Ops/s = requests answered per second"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	thr, _ := ChartsFor(recs, Group{"kv", 16}, []string{"ng", "redis"})
	if thr.YLabel != "ops/s (median)" || thr.Series[0].Points[0].Y != 600 {
		t.Errorf("chart %q, first point %+v", thr.YLabel, thr.Series[0].Points)
	}
}

func TestFanoutTable(t *testing.T) {
	phase := func(p50, p99 time.Duration, signals int, cpu time.Duration) fanout.Phase {
		s := loadgen.Summary{P50: p50, P99: p99}
		return fanout.Phase{Signals: signals, Receipt: s, Read: s, Last: s, CPUPerPush: cpu}
	}
	res := func(k time.Duration) fanout.Result {
		return fanout.Result{Subscribers: 1000, PushBytes: 221,
			Clean: phase(2*k, 8*k, 500, 6*time.Microsecond), Slow: phase(3*k, 8*k, 270, 6*time.Microsecond), After: phase(2*k, 9*k, 500, 0),
			SlowCapacity: 3 << 20, SlowFilled: 3<<20 - 64<<10, SlowCounted: 10, SlowPending: 3 << 20}
	}
	rep := &Report{Title: "t", Subject: "ng", Fanout: []fanout.Result{res(time.Millisecond), res(2 * time.Millisecond), res(3 * time.Millisecond)}}
	md := string(rep.Markdown())
	for _, want := range []string{
		"### Pub/sub fan-out, 1000 subscribers",
		"| all 1000 read | 500 | 1000 | 4.00 ms | 16.0 ms | 4.00 ms | 16.0 ms | 4.00 ms | 16.0 ms | 6.00 µs |", // medians over 3
		"| 999 read + 1 never-reading at its bound, until disconnected | 270 | 1000 or 999 | 6.00 ms |",
		"| after the disconnect | 500 | 999 | 4.00 ms | 18.0 ms | 4.00 ms | 18.0 ms | 4.00 ms | 18.0 ms | – |",
		"1.50× (p50) and 1.00× (p99)", "disconnected after 270 signals", "10 of whose replies", "Medians over 3 repetition(s)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// Each run rewrites only the sections it measured.
func TestSectionsAreIndependent(t *testing.T) {
	doc := "# PERF\n" + BeginMarker + "\ncore figures\n" + EndMarker + "\nhand text\n"
	out, err := PrimitivesSection.Replace([]byte(doc), []byte("prim v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), doc) || !strings.HasSuffix(string(out), PrimitivesSection.Begin+"\nprim v1\n"+PrimitivesSection.End+"\n") {
		t.Fatalf("primitives section not appended after the rest:\n%s", out)
	}
	out2, err := PrimitivesSection.Replace(out, []byte("prim v2\n"))
	if err != nil || !strings.Contains(string(out2), "core figures") || strings.Contains(string(out2), "prim v1") || !strings.Contains(string(out2), "prim v2") {
		t.Fatalf("second rewrite: %v\n%s", err, out2)
	}
	out3, err := CoreSection.Replace(out2, []byte("core v2\n"))
	if err != nil || strings.Contains(string(out3), "core figures") || !strings.Contains(string(out3), "prim v2") {
		t.Fatalf("core rewrite: %v\n%s", err, out3)
	}
}
