package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/cmd/dflockctl/internal/fakedflockd"
)

func fakeServer(t *testing.T, o fakedflockd.Options) (*fakedflockd.Server, []string) {
	t.Helper()
	s, err := fakedflockd.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	host, port, _ := net.SplitHostPort(s.Addr())
	return s, []string{envHost + "=" + host, envPort + "=" + port}
}

func testClient(t *testing.T, s *fakedflockd.Server, token string) *client.Conn {
	t.Helper()
	d := client.Dialer{AuthToken: token}
	c, err := d.Dial(context.Background(), s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func requestsOf(s *fakedflockd.Server, cmd string) []fakedflockd.Request {
	return slices.DeleteFunc(s.Requests(), func(r fakedflockd.Request) bool { return r.Cmd != cmd })
}

// TestLockNoOverlap runs concurrent "dflockctl lock" processes whose
// commands log start and end times; no two intervals may overlap.
func TestLockNoOverlap(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	log := filepath.Join(t.TempDir(), "log")
	const runners = 4
	script := `echo "start $ID $(date +%s.%N)" >> "$LOG"; sleep 0.2; echo "end $ID $(date +%s.%N)" >> "$LOG"`
	var wg sync.WaitGroup
	results := make([]result, runners)
	for i := range runners {
		cmd := start(t, append(env, "ID=r"+strconv.Itoa(i), "LOG="+log), "lock", "shared", "--timeout", "60", "--", "sh", "-c", script)
		wg.Go(func() { results[i] = wait(t, cmd) })
	}
	wg.Wait()
	for i, r := range results {
		expectCode(t, r, 0, "runner "+strconv.Itoa(i))
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2*runners {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), 2*runners, b)
	}
	prevEnd := 0.0
	for i := 0; i < len(lines); i += 2 {
		var id1, id2 string
		var t1, t2 float64
		if _, err := fmt.Sscanf(lines[i], "start %s %f", &id1, &t1); err != nil {
			t.Fatalf("line %q: %v", lines[i], err)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %s %f", &id2, &t2); err != nil || id2 != id1 {
			t.Fatalf("overlap: %q followed by %q", lines[i], lines[i+1])
		}
		if t1 < prevEnd || t2 < t1 {
			t.Fatalf("interval %s [%f, %f] overlaps the previous one ending %f", id1, t1, t2, prevEnd)
		}
		prevEnd = t2
	}
	if _, held := s.Holder("shared"); held {
		t.Fatal("lock still held after all runners exited")
	}
}

// TestFakeLeaseExpiresWithoutRenew is a control for the renewal test: the
// fake really hands the lock on when nobody renews.
func TestFakeLeaseExpiresWithoutRenew(t *testing.T) {
	s, _ := fakeServer(t, fakedflockd.Options{})
	a, b := testClient(t, s, ""), testClient(t, s, "")
	tok, _, err := client.Acquire(a, "k", 0, client.WithLeaseTTL(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := client.Acquire(b, "k", 10*time.Second, client.WithLeaseTTL(1)); err != nil {
		t.Fatalf("waiter not granted after the 1 s lease ran out: %v", err)
	}
	if _, err := client.Renew(a, "k", tok, client.WithLeaseTTL(1)); !errors.Is(err, client.ErrServer) {
		t.Fatalf("renew of the expired lease = %v, want a server error", err)
	}
}

// TestLockRenewsLease holds a 3 s lease for a command that runs much
// longer; without renewal the fake hands the lock on after 3 s (see
// TestFakeLeaseExpiresWithoutRenew), so try-locks must keep failing.
// Renewing every 0.5 s (--keepalive) leaves 2.5 s for a stalled machine
// before a late renewal would really lose the lock.
func TestLockRenewsLease(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	dir := t.TempDir()
	started, stop := filepath.Join(dir, "started"), filepath.Join(dir, "stop")
	cmd := start(t, env, "lock", "k", "--lease", "3", "--keepalive", "0.5", "--", "sh", "-c",
		`touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done`, "sh", started, stop)
	waitFor(t, "the command to start", func() bool { return exists(started) })
	probe := testClient(t, s, "")
	// Probe for two lease lengths; the command only ends when told to, so
	// a free lock can only mean a lost lease.
	until := time.Now().Add(6 * time.Second)
	probes := 0
	for time.Now().Before(until) {
		if _, _, err := client.Acquire(probe, "k", 0); !errors.Is(err, client.ErrTimeout) {
			t.Fatalf("try-lock while the command runs = %v, want timeout (lease not renewed)", err)
		}
		probes++
		time.Sleep(200 * time.Millisecond) // pacing the probes, not synchronisation
	}
	os.WriteFile(stop, nil, 0o644)
	r := wait(t, cmd)
	expectCode(t, r, 0, "lock")
	if strings.Contains(r.stderr, "lost") {
		t.Fatalf("unexpected warning: %s", r.stderr)
	}
	// Renewals are due every 0.5 s; how many ran depends on the machine's
	// load. What the probes' holding for over 6 s implies, however late
	// they ran: at least 2 renewals of the 3 s lease (fewer, and the fake
	// would have handed the lock on: the probes would prove nothing).
	renews := requestsOf(s, "n")
	if len(renews) < 2 {
		t.Fatalf("%d renewals in over 6 s of a 3 s lease, want at least 2", len(renews))
	}
	for _, n := range renews {
		if !strings.HasSuffix(n.Arg, " 3") {
			t.Fatalf("renewal %q does not repeat the granted lease 3", n.Arg)
		}
	}
	if len(requestsOf(s, "r")) != 1 {
		t.Fatal("no release after the command ended")
	}
	t.Logf("%d probes, %d renewals", probes, len(renews))
}

func TestLockExitStatus(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	for _, tt := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	} {
		expectCode(t, run(t, env, "lock", "k", "--", "sh", "-c", tt.script), tt.want, tt.script)
		if _, held := s.Holder("k"); held {
			t.Fatalf("%s: lock still held after dflockctl exited", tt.script)
		}
	}
	if got, want := len(requestsOf(s, "r")), 4; got != want {
		t.Fatalf("%d releases, want %d", got, want)
	}
}

func TestLockTimeout(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	if _, _, err := client.Acquire(testClient(t, s, ""), "k", 0); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	r := run(t, env, "lock", "k", "--timeout", "0", "--", "touch", ran)
	expectCode(t, r, exitBusy, "try-lock of held key")
	start := time.Now()
	r = run(t, env, "lock", "--timeout", "1", "k", "touch", ran)
	expectCode(t, r, exitBusy, "1 s wait for held key")
	if d := time.Since(start); d < time.Second {
		t.Errorf("gave up after %v, before the 1 s timeout", d)
	}
	if exists(ran) {
		t.Fatal("command ran without the lock")
	}
	if !strings.Contains(r.stderr, "timed out") {
		t.Errorf("message %q", r.stderr)
	}
	if got := requestsOf(s, "l"); got[len(got)-1].Arg != "1" {
		t.Errorf("lock request arg %q, want \"1\" (no lease: server default)", got[len(got)-1].Arg)
	}
}

func TestLockAuth(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{AuthToken: "s3cret"})
	tokenFile := writeFile(t, t.TempDir(), "token", "s3cret\n")
	for _, extra := range [][]string{
		{envAuthToken + "=s3cret"},
		{envAuthTokenFile + "=" + tokenFile},
	} {
		before := len(s.Requests())
		expectCode(t, run(t, append(env, extra...), "lock", "k", "--", "true"), 0, fmt.Sprint(extra))
		first := s.Requests()[before]
		if first.Cmd != "auth" || first.Key != "_" || first.Arg != "s3cret" {
			t.Fatalf("%v: first request %+v, want auth _ s3cret", extra, first)
		}
	}
	expectCode(t, run(t, env, "lock", "k", "--auth-token", "s3cret", "--", "true"), 0, "--auth-token")
	r := run(t, append(env, envAuthToken+"=wrong"), "lock", "k", "--", "true")
	expectCode(t, r, exitNoPerm, "wrong token")
	r = run(t, env, "lock", "k", "--", "true")
	expectCode(t, r, exitNoPerm, "no token on a server requiring one")
	if !strings.Contains(r.stderr, "requires an auth token") {
		t.Errorf("message %q", r.stderr)
	}
	expectCode(t, run(t, append(env, envAuthToken+"=s3cret"), "ping"), 0, "ping with token")
}

func TestLockForwardsSignals(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := start(t, env, "lock", "k", "--", "sh", "-c",
		`trap 'exit 42' TERM; touch "$1"; while :; do sleep 0.05; done`, "sh", ready)
	waitFor(t, "the command to start", func() bool { return exists(ready) })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectCode(t, wait(t, cmd), 42, "command trapping the forwarded SIGTERM")
	if _, held := s.Holder("k"); held {
		t.Fatal("lock still held")
	}
}

func TestLockSignalWhileWaiting(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	if _, _, err := client.Acquire(testClient(t, s, ""), "k", 0); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	cmd := start(t, env, "lock", "k", "--timeout", "60", "--", "touch", ran)
	waitFor(t, "the lock request", func() bool { return len(requestsOf(s, "l")) == 2 })
	cmd.Process.Signal(syscall.SIGINT)
	expectCode(t, wait(t, cmd), 128+int(syscall.SIGINT), "interrupted wait")
	if exists(ran) {
		t.Fatal("command ran after the wait was interrupted")
	}
}

func TestLockLost(t *testing.T) {
	for _, kill := range []bool{false, true} {
		t.Run(fmt.Sprintf("kill-on-lost=%v", kill), func(t *testing.T) {
			s, env := fakeServer(t, fakedflockd.Options{})
			dir := t.TempDir()
			ready, stop := filepath.Join(dir, "ready"), filepath.Join(dir, "stop")
			args := []string{"lock", "k", "--lease", "3"}
			if kill {
				args = append(args, "--kill-on-lost")
			}
			args = append(args, "--", "sh", "-c", `touch "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; exit 3`, "sh", ready, stop)
			cmd := start(t, env, args...)
			waitFor(t, "the command to start", func() bool { return exists(ready) })
			if !s.Revoke("k") {
				t.Fatal("lock not held by the command")
			}
			renewsAtRevoke := len(requestsOf(s, "n"))
			if kill {
				// Exits 143 once the next renewal (≤ 1 s away) fails.
				r := wait(t, cmd)
				expectCode(t, r, 128+int(syscall.SIGTERM), "killed on lost lease")
				if !strings.Contains(r.stderr, "lost the lock") {
					t.Fatalf("stderr %q lacks the warning", r.stderr)
				}
				return
			}
			waitFor(t, "a renewal after the revocation", func() bool { return len(requestsOf(s, "n")) > renewsAtRevoke })
			os.WriteFile(stop, nil, 0o644)
			r := wait(t, cmd)
			expectCode(t, r, 3, "command that outlived its lease")
			if !strings.Contains(r.stderr, `lost the lock on "k"`) || !strings.Contains(r.stderr, "keeps running") {
				t.Fatalf("stderr %q lacks the warning", r.stderr)
			}
			if len(requestsOf(s, "r")) != 0 {
				t.Fatal("released a lock it no longer held")
			}
		})
	}
}

// TestLockKeepalive: a long lease must not let the connection idle past the
// server's read timeout; --keepalive bounds the renewal interval.
func TestLockKeepalive(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{ReadTimeout: time.Second})
	r := run(t, env, "lock", "k", "--lease", "60", "--keepalive", "0.3", "--", "sleep", "2.5")
	expectCode(t, r, 0, "lock")
	if r.stderr != "" {
		t.Fatalf("stderr: %s", r.stderr)
	}
	if len(requestsOf(s, "r")) != 1 {
		t.Fatal("release did not reach the server: the connection was dropped")
	}
}

func TestLockCommandEnvironment(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	out := filepath.Join(t.TempDir(), "env")
	expectCode(t, run(t, env, "lock", "job-1", "--lease", "9", "--", "sh", "-c",
		`echo "$DFLOCKCTL_KEY $DFLOCKCTL_TOKEN $DFLOCKCTL_LEASE" > "$1"`, "sh", out), 0, "lock")
	b, _ := os.ReadFile(out)
	rel := requestsOf(s, "r")
	if len(rel) != 1 || string(b) != "job-1 "+rel[0].Arg+" 9\n" {
		t.Fatalf("command saw %q; release used token %+v", b, rel)
	}
}

func TestLockCommandNotFound(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	expectCode(t, run(t, env, "lock", "k", "--", "/nonexistent/dflockctl-test-cmd"), exitNotFound, "missing command")
	expectCode(t, run(t, env, "lock", "k", "--", "no-such-command-dflockctl"), exitNotFound, "command not in PATH")
	notExec := writeFile(t, t.TempDir(), "script", "#!/bin/sh\n")
	expectCode(t, run(t, env, "lock", "k", "--", notExec), exitCannotRun, "not executable")
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests sent for a command that cannot run", n)
	}
}

func TestLockUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"lock"},
		{"lock", "k"},
		{"lock", "k", "--"},
		{"lock", "k", "--lease", "0", "--", "true"},
		{"lock", "k", "--timeout", "-1", "--", "true"},
		{"lock", "k", "--timeout", "1.5", "--", "true"},
		{"lock", "k", "--bogus", "--", "true"},
		{"lock", "k", "--server", "h:port", "--", "true"},
		{"stats", "extra"},
	} {
		expectCode(t, run(t, nil, args...), exitUsage, fmt.Sprintf("%q", args))
	}
}

func TestStatsAndPing(t *testing.T) {
	s, env := fakeServer(t, fakedflockd.Options{})
	if _, _, err := client.Acquire(testClient(t, s, ""), "busy", 0); err != nil {
		t.Fatal(err)
	}
	r := run(t, env, "stats")
	expectCode(t, r, 0, "stats")
	if !strings.Contains(r.stdout, "\nlocks:\n") || !regexp.MustCompile(`(?m)^  busy +[0-9.]+ +1 +0$`).MatchString(r.stdout) {
		t.Fatalf("stats table %q lacks the lock busy (owner 1, no waiters)", r.stdout)
	}
	r = run(t, env, "stats", "--json")
	expectCode(t, r, 0, "stats --json")
	var doc struct {
		Locks []struct{ Key string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Locks) != 1 || doc.Locks[0].Key != "busy" {
		t.Fatalf("stats printed %q (%v)", r.stdout, err)
	}
	r = run(t, nil, "ping", "--server", s.Addr())
	expectCode(t, r, 0, "ping")
	if r.stdout != "ok\n" {
		t.Fatalf("ping printed %q", r.stdout)
	}
}

func TestServerUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	expectCode(t, run(t, nil, "ping", "--server", addr), exitUnavailable, "ping")
	expectCode(t, run(t, nil, "lock", "k", "--server", addr, "--", "true"), exitUnavailable, "lock")
}
