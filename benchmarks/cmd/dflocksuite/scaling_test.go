package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}},
		{"0-7", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"8-15", []int{8, 9, 10, 11, 12, 13, 14, 15}},
		{"0,2,4-6", []int{0, 2, 4, 5, 6}},
		{"3,1-2,2", []int{1, 2, 3}},
		{"1023", []int{1023}},
	} {
		got, err := parseCPUList(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, %v; want %v", c.in, got, err, c.want)
		}
		if back, err := parseCPUList(fmtCPUList(got)); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q: written %q, read back %v, %v", c.in, fmtCPUList(got), back, err)
		}
	}
	for _, bad := range []string{"", "a", "1-", "-1", "3-1", "1024", "0-1024", "0,,1", " 1", "1 ", "0-7,x"} {
		if got, err := parseCPUList(bad); !errors.Is(err, errCPUList) {
			t.Errorf("%q accepted as %v (%v)", bad, got, err)
		}
	}
	if got := fmtCPUList([]int{0, 1, 2, 4, 6, 7, 9}); got != "0-2,4,6-7,9" {
		t.Errorf("fmtCPUList = %q", got)
	}
}

func TestParseShapes(t *testing.T) {
	got, err := parseShapes("1000x1,200x16")
	if want := []shape{{1000, 1}, {200, 16}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseShapes = %v, %v; want %v", got, err, want)
	}
	if got[0].String() != "1000x1" || got[1].label() != "200×16" {
		t.Errorf("names %q, %q", got[0], got[1].label())
	}
	for _, bad := range []string{"", "1000", "x1", "1000x", "0x1", "1x0", "1x4097", "20001x1", "10X2", "1000x1,1000x1", "1000x1,", "-1x1", "1x1x1"} {
		if got, err := parseShapes(bad); err == nil {
			t.Errorf("%q accepted as %v", bad, got)
		}
	}
}

func TestParseScaling(t *testing.T) {
	host := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	parse := func(srv, cli, loops, shapes string, io int, allowed []int) (*runner, error) {
		s := &runner{scalingServerCPUs: srv, scalingClientCPUs: cli, scalingRedisIO: io}
		return s, s.parseScaling(loops, shapes, allowed)
	}
	s, err := parse("0-7", "8-15", "1,2,4,8", "1000x1,200x16", 4, host)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.scalingLoops, []int{1, 2, 4, 8}) || len(s.scalingShapes) != 2 {
		t.Fatalf("loops %v shapes %v", s.scalingLoops, s.scalingShapes)
	}
	// The dry run's: one CPU each on a 2-core machine.
	if _, err := parse("0", "1", "1,2", "100x1,20x16", 0, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	// No host check once re-executed pinned.
	if _, err := parse("0-7", "8-15", "1", "10x1", 4, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		srv, cli, loops, shapes string
		io                      int
		allowed                 []int
		want                    string
	}{
		{"0-8", "8-15", "1", "10x1", 4, host, "share CPU 8"},
		{"0-7", "8-15", "1", "10x1", 4, []int{0, 1}, "CPU 2 is not available here (this process may use CPU 0-1)"},
		{"0-7", "8-16", "1", "10x1", 4, host, "CPU 16 is not available"},
		{"0-7", "x", "1", "10x1", 4, host, "--scaling-client-cpus"},
		{"", "8-15", "1", "10x1", 4, host, "--scaling-server-cpus"},
		{"0-7", "8-15", "1,1", "10x1", 4, host, "--scaling-loops: 1 twice"},
		{"0-7", "8-15", "0", "10x1", 4, host, "--scaling-loops"},
		{"0-7", "8-15", "1", "10", 4, host, "--scaling-shapes"},
		{"0-7", "8-15", "1", "10x1", 1, host, "--scaling-redis-io-threads"},
		{"0-7", "8-15", "1", "10x1", -1, host, "--scaling-redis-io-threads"},
	} {
		_, err := parse(c.srv, c.cli, c.loops, c.shapes, c.io, c.allowed)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c, err, c.want)
		}
	}
}

func TestSMTShared(t *testing.T) {
	// Two threads per core, CPU n and n+8 siblings, as on many 16-thread hosts.
	ht := func(c int) []int { return []int{c % 8, c%8 + 8} }
	if got := smtShared("0-7", "8-15", ht); len(got) != 8 || got[0] != "0/8" || got[7] != "7/15" {
		t.Errorf("0-7 / 8-15 with HT: %v", got)
	}
	if got := smtShared("0-3,8-11", "4-7,12-15", ht); len(got) != 0 {
		t.Errorf("whole cores each: %v", got)
	}
	if got := smtShared("0-7", "8-15", func(c int) []int { return []int{c} }); len(got) != 0 {
		t.Errorf("no SMT: %v", got)
	}
	if got := smtShared("", "1", ht); got != nil {
		t.Errorf("unpinned: %v", got)
	}
}

func TestScalingRunsAlone(t *testing.T) {
	s := &runner{}
	if err := s.parseWorkloads("scaling"); err != nil || !s.scaling || s.core() {
		t.Fatalf("scaling: %v (scaling %v, core %v)", err, s.scaling, s.core())
	}
	if jobs := s.jobs(); len(jobs) != 0 {
		t.Fatalf("scaling alone: %d matrix jobs", len(jobs))
	}
	for _, mix := range []string{"scaling,lock", "incr,scaling", "scaling,fanout", "cluster,scaling"} {
		if err := (&runner{}).parseWorkloads(mix); err == nil || !strings.Contains(err.Error(), "scaling runs alone") {
			t.Errorf("%q: %v", mix, err)
		}
	}
}

// fakeScaling is a finished run of the 16-core defaults: 3 repetitions of
// ng at 1, 2, 4, 8 loops and Redis at 1000x1 and 200x16, pairs/s of ng
// growing with its loops by 1 + f×(loops−1).
func fakeScaling(loops []int, withRedis bool) *scalingResult {
	r := &scalingResult{ServerCPUs: "0-7", ClientCPUs: "8-15", Loops: loops,
		Shapes: []shape{{1000, 1}, {200, 16}}, RedisIOThreads: 4, FileLimit: 65536, Notes: []string{"a note"}}
	for _, n := range loops {
		r.Targets = append(r.Targets, ngLoopsName(n))
	}
	if withRedis {
		r.Targets = append(r.Targets, scalingRedis, redisIOName(4))
	}
	base := map[shape]float64{{1000, 1}: 100e3, {200, 16}: 500e3}
	growth := map[shape]float64{{1000, 1}: 5.4 / 7, {200, 16}: 4.0 / 7} // 8 loops: 6.4× and 5.0×
	for rep := 1; rep <= 3; rep++ {
		jitter := 1 + 0.01*float64(rep-2)
		for _, sh := range r.Shapes {
			for _, name := range r.Targets {
				run := scalingRun{Record: suite.Record{Target: name, Workload: "lock", Conns: sh.Conns, Depth: sh.Depth, Rep: rep,
					P50Ns: 400e3, P99Ns: 2e6, CPUPerPairNs: 3000, Cores: 1}, ClientCores: 2}
				var n int
				switch _, err := fmt.Sscanf(name, "ng-%d", &n); {
				case err == nil:
					run.Loops = n
					run.PairsPerS = base[sh] * (1 + growth[sh]*float64(n-1)) * jitter
					run.Cores = float64(n) * 0.9
					if n == 8 && sh.Depth == 16 {
						run.ClientCores = 7.6 // the generator is the limit
					}
				case name == scalingRedis:
					run.PairsPerS = 150e3 * jitter
				default:
					run.IOThreads = 4
					run.PairsPerS = 300e3 * jitter
				}
				run.ReqPerS = 2 * run.PairsPerS
				r.Runs = append(r.Runs, run)
			}
		}
	}
	return r
}

func TestScalingMarkdown(t *testing.T) {
	r := fakeScaling([]int{1, 2, 4, 8}, true)
	rep := &suite.Report{Title: "Scaling over cores (generated)", Env: []suite.KV{{Key: "cores", Value: "16"}}, Command: "go run ./benchmarks/cmd/dflocksuite --workloads scaling",
		Notes: r.Notes, RawPath: "benchmarks/results/scaling-full.json",
		Charts: []suite.ChartRef{{Title: "lock+release throughput by dflockd-ng --loops", Path: "benchmarks/results/full-scaling-throughput.svg"}}}
	md := string(r.markdown(rep))
	wantAll(t, "report", md,
		"## Scaling over cores (generated)",
		"| cores | 16 |",
		"- a note",
		"### lock+release, 1000 connections × depth 1",
		"### lock+release, 200 connections × depth 16",
		"| target | loops / threads | pairs/s | p50 | p99 | server CPU per pair | server cores | generator cores | vs ng-1 | vs redis |",
		"| ng-1 | 1 loop | 100k (99.0k–101k) | 400 µs | 2.00 ms | 3.00 µs | 0.90 | 2.00 | 1.00× | 0.67× |",
		"| ng-8 | 8 loops | 640k (634k–646k) | 400 µs | 2.00 ms | 3.00 µs | 7.20 | 2.00 | 6.40× | 4.27× |",
		"| redis | 1 thread | 150k (148k–152k) |",
		"| redis-io4 | 4 io-threads | 300k (297k–303k) | 400 µs | 2.00 ms | 3.00 µs | 1.00 | 2.00 |  | 2.00× |",
		"| ng-8 | 8 loops | 2.50M (2.48M–2.52M) |",
		"Target 8 loops ≥ 6× one loop: 1000×1 6.40× (met); 200×16 5.00× (not met).",
		"Target 8 loops ≥ 4× single-threaded Redis at 1,000 connections × depth 1: 4.27× (met).",
		"near its CPUs' capacity for ng-8 at 200×16 (7.60 of 8 cores)",
		"![lock+release throughput by dflockd-ng --loops](benchmarks/results/full-scaling-throughput.svg)",
		"Raw results: [`benchmarks/results/scaling-full.json`](benchmarks/results/scaling-full.json)",
	)
	// The header comes once, before the tables; the charts after them.
	if strings.Count(md, "### Charts") != 1 || strings.Index(md, "### Charts") < strings.Index(md, "Target 8 loops") {
		t.Errorf("charts misplaced:\n%s", md)
	}

	// A dry run's: loops 1,2 and small shapes; no Redis.
	r = fakeScaling([]int{1, 2}, false)
	r.Shapes = []shape{{1000, 1}, {200, 16}}
	md = string(r.markdown(&suite.Report{Title: "t"}))
	wantAll(t, "report", md,
		"Target 8 loops ≥ 6× one loop: not measured (it needs loop counts 1 and 8; this run's: 1, 2); 2 loops vs one: 1000×1 1.77×; 200×16 1.57×.",
		"Target 8 loops ≥ 4× single-threaded Redis at 1,000 connections × depth 1: not measured (it needs ng-8, redis and the 1000x1 shape).",
	)
	if strings.Contains(md, "near its CPUs' capacity") {
		t.Errorf("a generator at 2 of 8 cores called the limit:\n%s", md)
	}
}

func TestScalingChart(t *testing.T) {
	r := fakeScaling([]int{1, 2, 4, 8}, true)
	cs := r.charts()
	if len(cs) != 1 || cs[0].name != "scaling-throughput.svg" {
		t.Fatalf("charts %+v", cs)
	}
	var names []string
	for _, s := range cs[0].chart.Series {
		names = append(names, fmt.Sprintf("%s:%d", s.Name, len(s.Points)))
	}
	want := []string{"ng 1000×1:4", "ng 200×16:4", "redis 1000×1:2", "redis 200×16:2", "redis-io4 1000×1:2", "redis-io4 200×16:2"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("series %v, want %v", names, want)
	}
	if svg := cs[0].chart.SVG(); !bytes.Contains(svg, []byte("ng 200×16")) {
		t.Fatal("the SVG lacks a series")
	}
}

// write puts the section in PERF.md between its own markers, leaving the
// others alone, and the raw JSON and the chart beside it.
func TestScalingWrite(t *testing.T) {
	dir := t.TempDir()
	perf := filepath.Join(dir, "PERF.md")
	old := "# PERF\n\n" + suite.ClusterSection.Begin + "\ncluster figures\n" + suite.ClusterSection.End + "\n"
	if err := os.WriteFile(perf, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	s := &runner{stderr: &stderr, perfPath: perf, resultsDir: filepath.Join(dir, "benchmarks", "results")}
	r := fakeScaling([]int{1, 2, 4, 8}, true)
	if err := s.write([]string{"--workloads", "scaling"}, nil, nil, nil, nil, nil, r, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(perf)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.HasPrefix(doc, old) {
		t.Fatalf("the other sections changed:\n%s", doc)
	}
	sec, summary, ok := strings.Cut(doc[len(old):], suite.SummarySection.Begin+"\n")
	if !ok || !strings.HasPrefix(sec, scalingSection.Begin+"\n## Scaling over cores (generated)") || !strings.HasSuffix(sec, scalingSection.End+"\n") {
		t.Fatalf("section:\n%s", sec)
	}
	// The run ends by rebuilding the summary from the results just written
	// (appended here, as this PERF.md had no summary markers).
	if want := "| scaling: 8 loops vs 1 loop (every shape) | 1000×1 **6.40×**"; !strings.Contains(summary, want) || !strings.HasSuffix(summary, suite.SummarySection.End+"\n") {
		t.Errorf("summary lacks %q:\n%s", want, summary)
	}
	for _, want := range []string{"(benchmarks/results/scaling-full.json)", "(benchmarks/results/full-scaling-throughput.svg)",
		"Command: `go run ./benchmarks/cmd/dflocksuite --workloads scaling`"} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "benchmarks", "results", "scaling-full.json"))
	if err != nil {
		t.Fatal(err)
	}
	var blob struct {
		Scaling scalingResult `json:"scaling"`
	}
	if err := json.Unmarshal(raw, &blob); err != nil {
		t.Fatal(err)
	}
	if got := blob.Scaling; len(got.Runs) != len(r.Runs) || got.Runs[0].Target != "ng-1" || got.Runs[0].Loops != 1 || got.Runs[0].PairsPerS == 0 ||
		got.FileLimit != 65536 || !reflect.DeepEqual(got.Shapes, r.Shapes) {
		t.Fatalf("raw results %+v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "benchmarks", "results", "full-scaling-throughput.svg")); err != nil {
		t.Fatal(err)
	}

	// A second run rewrites the section only.
	r.Runs = r.Runs[:len(r.Targets)] // one shape of one repetition
	if err := s.write([]string{"--workloads", "scaling"}, nil, nil, nil, nil, nil, r, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(perf)
	if !strings.HasPrefix(string(b), old) || strings.Count(string(b), scalingSection.Begin) != 1 || !strings.Contains(string(b), "over 1 repetition(s)") {
		t.Fatalf("second write:\n%s", b)
	}
}

// The pin subcommand runs its program on the CPUs given: here the test
// binary itself stands in for the suite's, re-entered as a child.
func TestPinSubcommand(t *testing.T) {
	if cpus := os.Getenv("DFLOCKSUITE_TEST_PIN"); cpus != "" {
		os.Exit(pinMain([]string{cpus, "--", "/bin/sh", "-c", "cat /proc/self/status"}))
	}
	if code := pinMain([]string{"0", "/bin/true"}); code != 2 {
		t.Fatalf("pin without --: exit %d, want 2", code)
	}
	allowed, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	cpu := allowed[len(allowed)-1]
	cmd := exec.Command(os.Args[0], "-test.run=^TestPinSubcommand$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("DFLOCKSUITE_TEST_PIN=%d", cpu))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := fmt.Sprintf("Cpus_allowed_list:\t%d\n", cpu); !strings.Contains(string(out), want) {
		t.Fatalf("pinned to CPU %d, the child says:\n%s", cpu, out)
	}
}
