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
	code, stdout, stderr := run(t, "--with-ceiling", "--with-baseline", "--json",
		"--workload", "lock,hot", "--conns", "4", "--depth", "1,4",
		"--warmup", "50ms", "--duration", "150ms", "--settle", "0")
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
	code, stdout, stderr := run(t, "--with-baseline", "--inproc", "--conns", "1",
		"--warmup", "10ms", "--duration", "100ms", "--redis", "impostor="+impostor.Addr())
	if code != 1 || !strings.Contains(stderr, "FAIL impostor") || !strings.Contains(stderr, "malformed RESP") ||
		!strings.Contains(stdout, "baseline") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
