package main

import (
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/child"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/tlscert"
)

// jsonRuns parses --json output into its result records by target name.
func jsonRuns(t *testing.T, stdout string) map[string][]map[string]any {
	t.Helper()
	runs := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		runs[rec["target"].(string)] = append(runs[rec["target"].(string)], rec)
	}
	return runs
}

// --tls-target runs against a dflockd-protocol server over TLS, trusting
// --tls-ca or, with --tls-insecure, anything; without either, a
// certificate from an unknown CA fails the run.
func TestTLSTargetByAddress(t *testing.T) {
	files, err := child.NewTLSFiles(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := tlscert.Load(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	hub := session.NewServerHub(session.Config{}, engine.Config{MaxLocks: 1 << 20}, timerwheel.NewMonoClock(), 0)
	hub.Start()
	defer hub.Stop()
	srv := netconn.New(hub, netconn.Config{TLS: st.Config()})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln, session.Dflockd) }()
	defer func() {
		// Serve's goroutine ends before the hub it serves stops.
		_ = srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()

	short := []string{"--conns", "4", "--depth", "1,8", "--warmup", "20ms", "--settle", "0", "--json"}
	measured := func(code int, stdout string) bool {
		return code != 0 || allRecords(stdout, func(rec map[string]any) bool { return positive(rec, "pairs") })
	}
	for _, trust := range [][]string{{"--tls-ca", files.CAFile}, {"--tls-insecure"}} {
		code, stdout, stderr := runMeasured(t, measured, append(append([]string{"--tls-target", "ng=" + addr}, trust...), short...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", trust, code, stderr)
		}
		for _, rec := range jsonRuns(t, stdout)["ng"] {
			if rec["tls"] != true || rec["pairs"].(float64) <= 0 {
				t.Errorf("%v: %v", trust, rec)
			}
		}
	}
	code, _, stderr := run(t, append([]string{"--tls-target", "ng=" + addr}, append(short, "--duration", "150ms")...)...)
	if code != 1 || !strings.Contains(stderr, "certificate signed by unknown authority") {
		t.Errorf("no trust: exit %d, stderr %q", code, stderr)
	}
}

// --with-ng-tls and --with-redis-tls start both servers with one
// throw-away certificate and run them side by side, measured.
func TestWithTLSServersSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server")
	}
	args := []string{"--json", "--workload", "lock", "--conns", "4", "--depth", "1,8",
		"--warmup", "50ms", "--settle", "0"}
	bin := filepath.Join(t.TempDir(), "dflockd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dflockd-ng/dflockd/cmd/dflockd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args = append(args, "--with-ng-tls", bin)
	want := []string{"ng-tls"}
	if _, err := exec.LookPath("redis-server"); err == nil {
		args = append(args, "--with-redis-tls")
		want = append(want, "redis-tls")
	} else {
		t.Log("redis-server not installed: ng-tls only")
	}
	start := time.Now()
	// The server's CPU time moves in 10 ms clock ticks: a window in which
	// a loaded machine gave it less than one tick is retried, longer.
	code, stdout, stderr := runMeasured(t, func(code int, stdout string) bool {
		return code != 0 || allRecords(stdout, func(rec map[string]any) bool {
			return positive(rec, "pairs") && positive(rec, "server", "cpu_per_pair_ns")
		})
	}, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	runs := jsonRuns(t, stdout)
	for _, name := range want {
		if len(runs[name]) != 2 {
			t.Fatalf("%s: %d runs, want 2 (depth 1 and 8):\n%s", name, len(runs[name]), stdout)
		}
		for _, rec := range runs[name] {
			srv, _ := rec["server"].(map[string]any)
			if rec["tls"] != true || rec["pairs"].(float64) <= 0 || srv == nil || srv["cpu_per_pair_ns"].(float64) <= 0 {
				t.Errorf("incomplete result %v", rec)
			}
		}
	}
	t.Logf("%v for %d targets", time.Since(start).Round(time.Millisecond), len(want))
}
