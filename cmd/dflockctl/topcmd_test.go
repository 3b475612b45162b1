package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dflockd-ng/dflockd/internal/testport"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// "dflockctl top" in a pseudo-terminal against a real server process: a
// key held over TCP appears on the screen, q quits with status 0.
func TestTopThroughPTY(t *testing.T) {
	t.Parallel()
	httpPort := testport.Port(t)
	srv := testserver.Start(t, "--http-port", strconv.Itoa(httpPort), "--observatory-events", "1024")
	conn, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "l\ntop-held-key\n0 60\n")
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ok ") {
		t.Fatalf("lock: %q %v", line, err)
	}

	cmd := command(srv.Env(), "top", "--http", "127.0.0.1:"+strconv.Itoa(httpPort), "--interval", "0.2")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var waitErr error
	exited := make(chan struct{}) // closed once cmd.Wait returned (waitErr)
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() { // bounded: the test never leaves it running
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	var mu sync.Mutex
	var screen strings.Builder
	drained := make(chan struct{}) // closed once the pty has nothing more (top exited)
	go func() {
		defer close(drained)
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			mu.Lock()
			screen.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	seen := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(screen.String(), s)
	}
	testserver.Eventually(t, "the held key on top's screen", func() bool { return seen("top-held-key") && seen("1 keys held") })
	if !seen("\x1b[?1049h") {
		t.Error("top did not switch to the alternate screen")
	}
	if _, err := tty.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			t.Fatalf("top exited %d after q", ee.ExitCode())
		} else if waitErr != nil {
			t.Fatal(waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("top still running 20 s after q")
	}
	// What top wrote last may still be in the pty when it exits: read
	// it all (the pty ends once its last writer is gone).
	select {
	case <-drained:
	case <-time.After(20 * time.Second):
		t.Fatal("the pty still open 20 s after top exited")
	}
	if !seen("\x1b[?1049l") {
		t.Error("top did not restore the screen")
	}
}

// Off a terminal, and with --json, top prints one snapshot and exits.
func TestTopSnapshot(t *testing.T) {
	t.Parallel()
	srv := startObserved(t)
	at := "--http=" + srv.addr
	a, b := srv.session(), srv.session()
	if srv.lock(a, "hot%2Fone", 0) != 200 {
		t.Fatal("lock not granted")
	}
	waits := make(chan int, 1)
	go func() { waits <- srv.lock(b, "hot%2Fone", 60) }()
	testserver.Eventually(t, "b waiting", func() bool { return srv.waiters("hot/one") == 1 })

	r := run(t, nil, "top", at, "--json")
	expectCode(t, r, exitOK, "top --json")
	var snap topSnapshot
	if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil {
		t.Fatalf("top --json: %v\n%s", err, r.stdout)
	}
	if !snap.Events || snap.Held != 1 || snap.Waiting != 1 || len(snap.Hot.ByGrants) == 0 || snap.Hot.ByGrants[0].Key != "hot/one" || snap.Hot.ByGrants[0].Kind != "lock" ||
		len(snap.LongestWaits) != 1 || snap.LongestWaits[0].Key != "hot/one" || !strings.Contains(snap.LongestWaits[0].Client, "http") {
		t.Fatalf("top --json: %+v", snap)
	}
	if strings.Contains(r.stdout, "identity") {
		t.Fatalf("top --json without a policy names an identity:\n%s", r.stdout)
	}
	r = run(t, nil, "top", at)
	expectCode(t, r, exitOK, "top off a terminal")
	if !regexp.MustCompile(`(?m)^LONGEST WAITS +KIND +WAITER +WAITED$`).MatchString(r.stdout) {
		t.Fatalf("top off a terminal, without a policy: want no IDENTITY column:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "1 keys held, 1 waiting, 0 deadlocks") || !strings.Contains(r.stdout, "LONGEST WAITS") ||
		!strings.Contains(r.stdout, "hot/one") || !regexp.MustCompile(`(?m)^hot/one +lock +1\b`).MatchString(r.stdout) {
		t.Fatalf("top off a terminal:\n%s", r.stdout)
	}
	expectCode(t, run(t, nil, "top", at, "--interval", "0"), exitUsage, "top --interval 0")
}

// With a policy, top's waits name the identity each waiter authenticated
// as, off a terminal as in --json (issue #35).
func TestTopIdentities(t *testing.T) {
	t.Parallel()
	srv := startIdentityServer(t).as("tok-a")
	at := []string{"--http=" + srv.addr, "--auth-token", "tok-a"}
	a, b := srv.session(), srv.session()
	if srv.lock(a, "a.hot", 0) != 200 {
		t.Fatal("lock not granted")
	}
	waits := make(chan int, 1)
	go func() { waits <- srv.lock(b, "a.hot", 60) }()
	testserver.Eventually(t, "b waiting", func() bool { return srv.waiters("a.hot") == 1 })

	r := run(t, nil, append([]string{"top"}, at...)...)
	expectCode(t, r, exitOK, "top off a terminal")
	if !strings.Contains(r.stdout, "1 keys held, 1 waiting, 0 deadlocks") ||
		!regexp.MustCompile(`(?m)^LONGEST WAITS +KIND +WAITER +IDENTITY +WAITED$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^a\.hot +lock +#\d+ http 127\.0\.0\.1 +team-a +\S+$`).MatchString(r.stdout) {
		t.Fatalf("top off a terminal: want the waiter's identity in its row:\n%s", r.stdout)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("top off a terminal: a line of %d columns, over 100: %q", n, l)
		}
	}
	r = run(t, nil, append([]string{"top", "--json"}, at...)...)
	expectCode(t, r, exitOK, "top --json")
	var snap topSnapshot
	if err := json.Unmarshal([]byte(r.stdout), &snap); err != nil || len(snap.LongestWaits) != 1 || snap.LongestWaits[0].Identity != "team-a" {
		t.Fatalf("top --json: %v\n%s", err, r.stdout)
	}
	endSessions(t, srv, waits, a, b)
}
