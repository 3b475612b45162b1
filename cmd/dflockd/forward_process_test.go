package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// Tests of --cluster-forward with three real members on 127.0.0.1
// (helpers in cluster_process_test.go): clients that know nothing of
// error_not_leader connect to any member.

// relaysTo returns the member whose client port m's process holds an
// established connection to (a relay of --cluster-forward), or nil. It
// reads the process's sockets from /proc: a relay cannot be told from a
// local connection on the wire, which is the point of it.
func relaysTo(t *testing.T, m *member, ms []*member) *member {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", m.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", m.cmd.Process.Pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	byPort := map[uint64]*member{}
	for _, o := range ms {
		if o != m {
			_, p, _ := net.SplitHostPort(o.client)
			n, _ := strconv.ParseUint(p, 10, 16)
			byPort[n] = o
		}
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st ... uid timeout inode
			if len(f) < 10 || f[3] != "01" || !inodes[f[9]] {
				continue
			}
			i := strings.LastIndexByte(f[2], ':')
			port, _ := strconv.ParseUint(f[2][i+1:], 16, 16)
			if o := byPort[port]; o != nil {
				return o
			}
		}
	}
	return nil
}

// forwardRoles connects a client through every member (with dial;
// dialMember if nil) and finds the leader: the member the others relay
// their client to. It returns the leader and each member's client
// connection.
func forwardRoles(t *testing.T, ms []*member, dial func(*testing.T, *member) *conn) (*member, map[*member]*conn) {
	t.Helper()
	if dial == nil {
		dial = dialMember
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		conns := map[*member]*conn{}
		for _, m := range ms {
			c := dial(t, m)
			// Relayed (or served) once a leader is known: within the
			// forwarder's wait, 5 s.
			if got := c.do("ping", "_", "_", 15*time.Second); got != "ok" {
				t.Fatalf("ping through %s: %q", m.id, got)
			}
			conns[m] = c
		}
		// One member relays to none (it leads); the others, to it.
		to := map[*member]*member{}
		var ldr *member
		for _, m := range ms {
			if to[m] = relaysTo(t, m, ms); to[m] == nil {
				ldr = m
			}
		}
		agree := ldr != nil
		for _, m := range ms {
			agree = agree && (m == ldr || to[m] == ldr)
		}
		if agree {
			return ldr, conns
		}
		if time.Now().After(deadline) {
			t.Fatal("the members do not agree on a leader to relay to")
		}
		for _, c := range conns {
			c.c.Close()
		}
	}
}

// relayClosed asserts that the server ends c (EOF or a reset, not a
// timeout) within d, after any of the lines allowed.
func relayClosed(t *testing.T, c *conn, d time.Duration, allowed ...string) {
	t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(d))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection is still open after %v", d)
			}
			if line != "" {
				t.Fatalf("read %q before the close", line)
			}
			return
		}
		line = strings.TrimSuffix(line, "\n")
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(line, a)
		}
		if !ok {
			t.Fatalf("read %q before the close", line)
		}
	}
}

// TestClusterForward: a client that does not follow redirects works
// through any member; when the leader is killed, the connections relayed
// to it are closed, and a new one through a survivor works.
func TestClusterForward(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	if runtime.GOOS != "linux" {
		t.Skip("finds the relays in /proc")
	}
	ms := startMembersWith(t, 3, "--cluster-forward")
	ldr, conns := forwardRoles(t, ms, nil)
	var fs []*member
	for _, m := range ms {
		if m != ldr {
			fs = append(fs, m)
		}
	}
	t.Logf("leader %s; followers %s and %s", ldr.id, fs[0].id, fs[1].id)
	a, b := conns[fs[0]], conns[fs[1]]

	tok := strings.Fields(a.do("l", "fwd", "0 30", 10*time.Second))
	if len(tok) != 3 || tok[0] != "ok" {
		t.Fatalf("l through follower %s: %q, want a grant", fs[0].id, tok)
	}
	if got := b.do("l", "fwd", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("try-lock through follower %s while held: %q, want timeout", fs[1].id, got)
	}
	if got := b.do("stats", "_", "_", 10*time.Second); !strings.Contains(got, `"key":"fwd"`) {
		t.Fatalf("stats through follower %s: %q, want the lock", fs[1].id, got)
	}
	if got := a.do("r", "fwd", tok[1], 10*time.Second); got != "ok" {
		t.Fatalf("release through follower %s: %q", fs[0].id, got)
	}
	grantFence(t, b.do("l", "fwd", "0 30", 10*time.Second))
	if got := conns[ldr].do("l", "fwd", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("try-lock on the leader itself: %q, want timeout", got)
	}
	if got := a.do("incr", "visits", "2", 10*time.Second); got != "ok 2" {
		t.Fatalf("incr through follower %s: %q", fs[0].id, got)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		pythonClient(t, py, fs[1].client)
	}

	ldr.signal(syscall.SIGKILL)
	killed := time.Now()
	relayClosed(t, a, 10*time.Second)
	relayClosed(t, b, 10*time.Second)
	t.Logf("relays closed %v after the leader died", time.Since(killed).Round(time.Millisecond))

	// A new connection through a survivor waits for the election and is
	// relayed to (or served by) the new leader.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		c := dialMember(t, fs[0])
		got := c.do("l", "after", "0 5", 15*time.Second)
		if strings.HasPrefix(got, "ok ") {
			grantFence(t, got)
			if got := c.do("incr", "visits", "1", 10*time.Second); got != "ok 3" {
				t.Fatalf("counter through the new leader: %q, want ok 3", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("through %s after the leader died: %q", fs[0].id, got)
		}
		c.c.Close()
	}
	t.Logf("served through %s %v after the leader died", fs[0].id, time.Since(killed).Round(time.Millisecond))
}

// pythonClient runs a raw-socket Python client, which knows nothing of
// redirects, through member addr.
func pythonClient(t *testing.T, python, addr string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	const script = `
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
f = s.makefile("rw", newline="\n")
def do(cmd, key, arg):
    f.write(cmd + "\n" + key + "\n" + arg + "\n"); f.flush()
    return f.readline().rstrip("\n")
g = do("l", "py-job", "0 10").split()
assert g[0] == "ok" and len(g) == 3, g
assert do("r", "py-job", g[1]) == "ok"
print("python ok")
`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", script, host, port).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "python ok" {
		t.Fatalf("python client through %s: %v\n%s", addr, err, out)
	}
}

// TestClusterForwardDeposedLeaderHangsUp: a leader that is deposed (here
// paused while the others elect another) answers its waiting request
// error_not_leader, then closes its client connections, so that clients
// reconnect; a new connection to it is relayed to the new leader. Over
// both client transports: the gnet loops (the default), whose hang-up and
// answers to a paused connection are their own, and netconn
// (--cluster-loops=false).
func TestClusterForwardDeposedLeaderHangsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	if runtime.GOOS != "linux" {
		t.Skip("finds the relays in /proc")
	}
	for _, tr := range []string{"netconn", "loops"} {
		t.Run(tr, func(t *testing.T) {
			extra := []string{"--cluster-forward"}
			if tr == "netconn" {
				extra = append(extra, "--cluster-loops=false")
			}
			testDeposedLeaderHangsUp(t, extra)
		})
	}
}

func testDeposedLeaderHangsUp(t *testing.T, extra []string) {
	ms := startMembersWith(t, 3, extra...)
	ldr, conns := forwardRoles(t, ms, nil)
	holder := conns[ldr]
	grantFence(t, holder.do("l", "held", "0 60", 10*time.Second))
	waiter := dialMember(t, ldr)
	fmt.Fprintf(waiter.c, "l\nheld\n60\n")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(ask(ldr.client, "stats", "_", "_", 5*time.Second), `"waiters":1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter is not queued")
		}
	}

	ldr.signal(syscall.SIGSTOP)
	var f *member
	for _, m := range ms {
		if m != ldr {
			f = m
			break
		}
	}
	// The others elect a leader: a write through a follower is relayed
	// to it.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if got := ask(f.client, "incr", "elected", "1", 15*time.Second); strings.HasPrefix(got, "ok ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader was elected while the old one was paused")
		}
	}
	ldr.signal(syscall.SIGCONT)

	_ = waiter.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	if line, err := waiter.r.ReadString('\n'); !strings.HasPrefix(line, "error_not_leader") {
		t.Fatalf("the deposed leader's waiter got %q (%v), want error_not_leader", line, err)
	}
	relayClosed(t, waiter, 15*time.Second)
	relayClosed(t, holder, 15*time.Second)
	// The lock is held on (its lease runs), and the old leader now relays.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		got := ask(ldr.client, "l", "held", "0", 15*time.Second)
		if got == "timeout" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("try-lock through the deposed leader: %q, want timeout", got)
		}
	}
}

// TestClusterForwardTLS: with --tls-cert, a follower relays the TLS bytes
// as they are: the client's TLS session is with the leader, and works
// through any member.
func TestClusterForwardTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	if runtime.GOOS != "linux" {
		t.Skip("finds the relays in /proc")
	}
	ca := certtest.NewCA(t, "cluster-forward test CA")
	cert, key := ca.Leaf(t, "members").Write(t, t.TempDir())
	ms := startMembersWith(t, 3, "--cluster-forward", "--tls-cert", cert, "--tls-key", key)
	dialTLS := func(t *testing.T, m *member) *conn {
		t.Helper()
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", m.client,
			certtest.ClientConfig(ca.Pool))
		if err != nil {
			t.Fatalf("TLS through %s: %v", m.id, err)
		}
		t.Cleanup(func() { c.Close() })
		return &conn{t: t, c: c, r: bufio.NewReader(c)}
	}
	ldr, conns := forwardRoles(t, ms, dialTLS)
	var fs []*member
	for _, m := range ms {
		if m != ldr {
			fs = append(fs, m)
		}
	}
	grantFence(t, conns[fs[0]].do("l", "tls-job", "0 30", 10*time.Second))
	if got := conns[fs[1]].do("l", "tls-job", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("try-lock over TLS through follower %s while held: %q, want timeout", fs[1].id, got)
	}
	// A plaintext client of a follower gets nothing: the leader's TLS
	// listener refuses it, through the relay.
	if got := ask(fs[1].client, "ping", "_", "_", 3*time.Second); got != "" {
		t.Fatalf("a plaintext client through a follower got %q", got)
	}
}
