package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// wrongServer answers every dflockd request with reply.
func wrongServer(t *testing.T, reply string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					for i := 0; i < 3; i++ {
						if _, err := r.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestSuiteFailsLoudlyOnWrongReply(t *testing.T) {
	addr := wrongServer(t, "ok not-a-lease\n")
	var stderr bytes.Buffer
	s := &runner{stderr: &stderr, reps: 1, warmup: 50 * time.Millisecond, duration: 200 * time.Millisecond,
		lock: true, lockConns: []int{2}, depths: []int{1},
		targets: []*target{{name: "fake", addr: addr, kind: "line"}}}
	_, err := s.runMatrix(context.Background())
	if err == nil {
		t.Fatal("wrong replies were accepted")
	}
	msg := err.Error()
	for _, want := range []string{"target fake", "ok not-a-lease"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if !strings.Contains(stderr.String(), "[1/1] fake lock c=2 d=1 rep 1/1") || !strings.Contains(stderr.String(), "FAIL") {
		t.Errorf("progress line missing: %q", stderr.String())
	}
}

func TestJobsMatrix(t *testing.T) {
	s := &runner{reps: 3, lockConns: []int{1, 10, 50, 200, 500}, depths: []int{1, 16}, hotConns: []int{10, 50, 200},
		primConns: []int{10, 50}, primDepths: []int{16},
		targets: []*target{{name: "ng", kind: "line", hot: true, prim: true}, {name: "redis", kind: "redis", prim: true},
			{name: "redis-del", kind: "redis"}, {name: "etcd", kind: "etcd"}}}
	if err := s.parseWorkloads("lock,hot,incr,kv,list,fanout"); err != nil {
		t.Fatal(err)
	}
	jobs := s.jobs()
	// per rep: lock 5×2×(ng, redis, redis-del) + 5×1 (etcd, depth 1 only)
	// + hot 3 (ng) + 3 primitives × 2 conns × (ng, redis)
	if want := 3 * (30 + 5 + 3 + 12); len(jobs) != want {
		t.Fatalf("%d jobs, want %d", len(jobs), want)
	}
	for _, j := range jobs {
		if j.t.kind == "etcd" && j.depth != 1 || j.workload == "hot" && !j.t.hot || j.workload.Primitive() && !j.t.prim {
			t.Fatalf("impossible job %+v", j)
		}
	}
	// Only the primitives: no lock or hot job, and the core section (and
	// its servers, and memory) stays out of the run.
	s.lock, s.hot, s.prims = false, false, nil
	if err := s.parseWorkloads("incr,list"); err != nil {
		t.Fatal(err)
	}
	jobs = s.jobs()
	if want := 3 * 2 * 2 * 2; len(jobs) != want || s.core() {
		t.Fatalf("%d jobs (core %v), want %d", len(jobs), s.core(), want)
	}
	for _, j := range jobs {
		if j.workload != "incr" && j.workload != "list" {
			t.Fatalf("job %+v", j)
		}
	}
	// The cluster comparison runs its own jobs on servers of its own.
	s.prims = nil
	if err := s.parseWorkloads("cluster"); err != nil {
		t.Fatal(err)
	}
	if jobs := s.jobs(); len(jobs) != 0 || s.core() || !s.cluster {
		t.Fatalf("cluster: %d matrix jobs (core %v, cluster %v)", len(jobs), s.core(), s.cluster)
	}
	if err := s.parseWorkloads("incr,nope"); err == nil {
		t.Fatal("unknown workload accepted")
	}
}

func TestTargetFlag(t *testing.T) {
	var n namedAddrs
	if err := n.Set("dflockd=127.0.0.1:6388"); err != nil {
		t.Fatal(err)
	}
	// With a process id: this test's own, which exists.
	self := fmt.Sprintf("v1.10.0=127.0.0.1:6389@%d", os.Getpid())
	if err := n.Set(self); err != nil {
		t.Fatal(err)
	}
	if got := n[len(n)-1]; got.addr != "127.0.0.1:6389" || got.pid != os.Getpid() || !strings.Contains(n.String(), self) {
		t.Fatalf("parsed %+v, String %q", got, n.String())
	}
	for _, bad := range []string{"x=10.0.0.1:1", "ng=127.0.0.1:1", "dflockd=127.0.0.1:2", "127.0.0.1:1",
		"y=127.0.0.1:3@0", "y=127.0.0.1:3@-4", "y=127.0.0.1:3@abc", "y=127.0.0.1:3@999999999"} {
		if err := n.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestNamedBins(t *testing.T) {
	var n namedBins
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Set("before=" + exe); err != nil || len(n) != 1 || n[0].name != "before" || n[0].path != exe {
		t.Fatalf("before=%s: %v, %+v", exe, err, n)
	}
	for _, bad := range []string{"before=" + exe, "ng=" + exe, "redis=" + exe, "x=/no/such/binary", "=x", exe} {
		if err := n.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// --summary-only rewrites the summary from the results on disk and runs
// nothing: with no results every row is not measured.
func TestSummaryOnlyRunsNothing(t *testing.T) {
	dir := t.TempDir()
	perf := filepath.Join(dir, "PERF.md")
	if err := os.WriteFile(perf, []byte("# P\n<!-- suite:summary:begin -->\n<!-- suite:summary:end -->\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	if rc := suiteMain([]string{"--summary-only", "--perf", perf, "--results", dir}, &stderr); rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	got, err := os.ReadFile(perf)
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.Contains(s, "| idle RSS at startup | not measured: ") || !strings.HasSuffix(s, "<!-- suite:summary:end -->\ntail\n") {
		t.Errorf("PERF.md after --summary-only:\n%s", s)
	}
	if strings.Contains(stderr.String(), "dflocksuite: done in") {
		t.Errorf("--summary-only ran workloads: %s", stderr.String())
	}
}
