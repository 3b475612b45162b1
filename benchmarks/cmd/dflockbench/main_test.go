package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/benchmarks/baseline"
)

// The test binary doubles as the child server: startReference re-executes
// os.Executable() with "serve …", which is this binary under go test.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serveMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// lockedBuffer is a bytes.Buffer several goroutines may write: child
// processes' stderr is copied into it by os/exec's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb lockedBuffer
	code = benchMain(args, &out, &errb)
	return code, out.String(), errb.String()
}

// durations are the --duration values given, in turn, to a run that must
// measure something. How much a window of a given length holds depends
// on how the machine schedules the test, which no assertion may depend
// on: a window that measured too little (a loaded machine stalled through
// it) is not judged but retried, longer. The last is longer than any stall.
var durations = []string{"150ms", "600ms", "2400ms", "9600ms"}

// runMeasured runs the CLI with args and each of durations in turn until
// measured reports that the run measured enough (or that it failed: that
// is for the caller to judge); it returns the last run's outcome.
func runMeasured(t *testing.T, measured func(code int, stdout string) bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for _, d := range durations {
		code, stdout, stderr = run(t, append(args[:len(args):len(args)], "--duration", d)...)
		if measured(code, stdout) {
			break
		}
	}
	return code, stdout, stderr
}

// allRecords reports whether ok holds of every result record in --json
// output (skipped runs aside).
func allRecords(stdout string, ok func(rec map[string]any) bool) bool {
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil {
			return true // not for this helper to judge
		}
		if rec["skipped"] == nil && !ok(rec) {
			return false
		}
	}
	return true
}

// positive reports whether rec's field path (a nested object's keys)
// is a number above 0.
func positive(rec map[string]any, path ...string) bool {
	var v any = rec
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	f, _ := v.(float64)
	return f > 0
}

func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{},                            // no target
		{"--target", "10.0.0.1:6388"}, // not loopback
		{"--target", "a=127.0.0.1:1", "--target", "a=127.0.0.1:2"}, // duplicate name
		{"--with-ceiling", "--workload", "nope"},
		{"--with-ceiling", "--depth", "0"},
		{"--with-ceiling", "--pid", "x=12"}, // names no target
	} {
		if code, _, stderr := run(t, args...); code != 2 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, stderr)
		}
	}
}

// Child-process servers: results come with server CPU and memory, and a
// blocking workload is skipped at depth > 1 rather than run.
func TestChildServersJSON(t *testing.T) {
	code, stdout, stderr := runMeasured(t, func(code int, stdout string) bool {
		return code != 0 || allRecords(stdout, func(rec map[string]any) bool { return positive(rec, "requests") })
	}, "--with-ceiling", "--with-baseline", "--json",
		"--workload", "lock,hot", "--conns", "4", "--depth", "1,4",
		"--warmup", "50ms", "--settle", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var results, skipped int
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if rec["skipped"] != nil {
			skipped++
			continue
		}
		results++
		srv, _ := rec["server"].(map[string]any)
		if rec["requests"].(float64) <= 0 || srv == nil || srv["peak_rss_bytes"].(float64) <= 0 {
			t.Errorf("incomplete result %s", line)
		}
	}
	// 2 targets × (lock d1, lock d4, hot d1) = 6 runs; hot d4 skipped twice.
	if results != 6 || skipped != 2 {
		t.Errorf("%d results, %d skipped; want 6 and 2:\n%s", results, skipped, stdout)
	}
}

func TestInprocText(t *testing.T) {
	code, stdout, stderr := run(t, "--with-baseline", "--inproc", "--workload", "try",
		"--conns", "3", "--depth", "2", "--warmup", "20ms", "--duration", "200ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "baseline") || !strings.Contains(stdout, "errors=0") || strings.Contains(stdout, "server:") {
		t.Errorf("unexpected output:\n%s", stdout)
	}
}

// A target that answers wrongly fails the run with exit status 1 and a
// message naming it, and the other targets still report.
func TestWrongTargetFails(t *testing.T) {
	// The baseline speaks dflockd; as a "Redis" target its replies are wrong.
	impostor, err := baseline.Start("127.0.0.1:0", baseline.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	// The impostor fails at its first reply; a window in which none came
	// (a loaded machine) is retried, longer.
	code, stdout, stderr := runMeasured(t, func(code int, _ string) bool { return code != 0 },
		"--with-baseline", "--inproc", "--conns", "1",
		"--warmup", "10ms", "--redis", "impostor="+impostor.Addr())
	if code != 1 || !strings.Contains(stderr, "FAIL impostor") || !strings.Contains(stderr, "malformed RESP") ||
		!strings.Contains(stdout, "baseline") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
