package main

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// Tests of cluster mode with real processes on 127.0.0.1: a member is
// killed with SIGKILL, or paused with SIGSTOP, while a client holds a lock
// granted by it.

type member struct {
	t      *testing.T
	id     string
	client string // host:port
	args   []string
	bin    string // the binary start runs ("": this tree's, binary)
	cmd    *exec.Cmd
	log    *testserver.Output
}

// startMembers runs an n-member cluster bootstrapped from its peer list.
func startMembers(t *testing.T, n int) []*member {
	t.Helper()
	return startMembersWith(t, n)
}

// startMembersWith is startMembers with extra flags for every member.
func startMembersWith(t *testing.T, n int, extra ...string) []*member {
	t.Helper()
	ms := newMembers(t, n, extra...)
	for _, m := range ms {
		m.start()
	}
	return ms
}

// newMembers is startMembersWith without the start: the members' flags,
// for a test to choose their binaries.
func newMembers(t *testing.T, n int, extra ...string) []*member {
	t.Helper()
	token := strings.Repeat("k", 40)
	var ms []*member
	var peers []string
	raftAddrs := make([]string, n)
	for i := range n {
		m := &member{t: t, id: fmt.Sprint("n", i+1), client: freeAddr(t)}
		raftAddrs[i] = freeAddr(t)
		peers = append(peers, fmt.Sprintf("%s=%s@%s", m.id, raftAddrs[i], m.client))
		ms = append(ms, m)
	}
	dir := t.TempDir()
	for i, m := range ms {
		_, port, _ := net.SplitHostPort(m.client)
		m.args = []string{"--host", "127.0.0.1", "--port", port, "--raft-dir", filepath.Join(dir, m.id),
			"--node-id", m.id, "--raft-addr", raftAddrs[i], "--cluster-peers", strings.Join(peers, ","),
			"--cluster-bootstrap", "--raft-auth-token", token, "--shutdown-timeout", "1"}
		m.args = append(m.args, extra...)
	}
	return ms
}

func (m *member) start() {
	m.t.Helper()
	m.log = new(testserver.Output)
	bin := m.bin
	if bin == "" {
		bin = binary(m.t)
	}
	m.cmd = exec.Command(bin, m.args...)
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	cmd, log := m.cmd, m.log
	m.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if m.t.Failed() {
			m.t.Logf("%s log:\n%s", m.id, log.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", m.client); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("%s does not listen on %s", m.id, m.client)
		}
	}
}

func (m *member) signal(sig syscall.Signal) {
	if err := m.cmd.Process.Signal(sig); err != nil {
		m.t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		_ = m.cmd.Wait()
	}
}

// ask sends one request on a new connection and returns the reply ("" if
// none within the timeout).
func ask(addr, cmd, key, arg string, within time.Duration) string {
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(within))
	fmt.Fprintf(c, "%s\n%s\n%s\n", cmd, key, arg)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\n")
}

// leader polls the members (but skip) until one accepts a write; it
// returns that member and when it first did.
func leader(t *testing.T, ms []*member, skip *member, within time.Duration) (*member, time.Time) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, m := range ms {
			if m != skip && ask(m.client, "incr", "probe", "1", 500*time.Millisecond) != "" &&
				strings.HasPrefix(ask(m.client, "incr", "probe", "1", 500*time.Millisecond), "ok") {
				return m, time.Now()
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no member accepted a write within %v", within)
	return nil, time.Time{}
}

// askLeader sends one request to the member that leads (not skip), again
// to the next one while the answer is error_not_leader or none.
func askLeader(t *testing.T, ms []*member, skip *member, cmd, key, arg string, within time.Duration) string {
	t.Helper()
	for deadline := time.Now().Add(within + 30*time.Second); ; {
		m, _ := leader(t, ms, skip, 15*time.Second)
		got := ask(m.client, cmd, key, arg, within)
		if got != "" && !strings.HasPrefix(got, "error_not_leader") {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s %s: still %q", cmd, key, arg, got)
		}
	}
}

// conn is a client connection kept open.
type conn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialMember(t *testing.T, m *member) *conn {
	t.Helper()
	c, err := net.Dial("tcp", m.client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &conn{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *conn) do(cmd, key, arg string, within time.Duration) string {
	c.t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(within))
	fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg)
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s %s %s: %v", cmd, key, arg, err)
	}
	return strings.TrimSuffix(line, "\n")
}

func grantFence(t *testing.T, reply string) uint64 {
	t.Helper()
	f := strings.Fields(reply)
	if len(f) != 3 || f[0] != "ok" {
		t.Fatalf("not a grant: %q", reply)
	}
	tok, ok := fence.ParseToken([]byte(f[1]))
	if !ok {
		t.Fatalf("bad token: %q", reply)
	}
	return tok.Fence
}

// failover holds a lock granted by the leader, takes the leader down with
// down(), and checks what the survivors do with the lock; it returns the
// old and the new leader.
func failover(t *testing.T, ms []*member, down func(*member)) (old, next *member) {
	const lease = 6 * time.Second
	l1, _ := leader(t, ms, nil, 15*time.Second)
	holder := dialMember(t, l1)
	sent := time.Now()
	f1 := grantFence(t, holder.do("l", "held", fmt.Sprint("0 ", int(lease.Seconds())), 20*time.Second))

	downAt := time.Now()
	down(l1)
	// How long the election takes depends on the machine's load: logged,
	// not bounded (but by a deadline that only a cluster that never
	// elects runs out).
	l2, accepted := leader(t, ms, l1, 30*time.Second)
	t.Logf("%s down; %s accepted a write %v later", l1.id, l2.id, accepted.Sub(downAt).Round(time.Millisecond))
	// Under load a second election may follow: error_not_leader (or a
	// connection that a deposed member closes) is an answer to ask the
	// leader again, never a grant.
	if got := askLeader(t, ms, l1, "l", "held", "0", 5*time.Second); got != "timeout" && time.Since(sent) < lease {
		t.Fatalf("try-lock on the new leader during the lease: %q, want timeout", got)
	}
	g2 := askLeader(t, ms, l1, "l", "held", "30", 40*time.Second)
	f2 := grantFence(t, g2)
	if held := time.Since(sent); held < lease {
		t.Fatalf("granted %v after the holder's request, before its %v lease could end", held, lease)
	}
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
	return l1, l2
}

func TestClusterSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startMembers(t, 3)
	old, next := failover(t, ms, func(m *member) { m.signal(syscall.SIGKILL) })
	// Each survivor names the new leader in one INFO line.
	for _, m := range ms {
		if m == old {
			continue
		}
		testserver.Eventually(t, m.id+" logs the new leader", func() bool {
			return strings.Contains(m.log.String(), `msg="raft: a new leader" leader_id=`+next.id)
		})
	}

	// The killed member restarts on its raft directory, catches up and
	// sends clients to the new leader.
	old.start()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := ask(old.client, "l", "other", "0", 2*time.Second)
		if got == "error_not_leader "+next.client {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member answers %q, want a redirect to %s", got, next.client)
		}
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := ask(old.client, "stats", "_", "_", 2*time.Second)
		if strings.Contains(got, `"key":"held"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted member's stats never showed the replicated lock: %q", got)
		}
	}
}

func TestClusterSurvivesSIGSTOP(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startMembers(t, 3)
	var waiter *conn
	old, next := failover(t, ms, func(m *member) {
		// A waiter parked on the leader that is about to freeze.
		waiter = dialMember(t, m)
		fmt.Fprintf(waiter.c, "l\nheld\n60\n")
		m.signal(syscall.SIGSTOP)
	})
	old.signal(syscall.SIGCONT)
	// Woken, the old leader learns it was deposed: its parked waiter is
	// told to go to the leader, and so is a new request.
	if got := waiter.do("ping", "_", "_", 10*time.Second); !strings.HasPrefix(got, "error_not_leader") {
		t.Fatalf("parked waiter on the paused leader: %q, want error_not_leader", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		got := ask(old.client, "l", "other", "0", 2*time.Second)
		if got == "error_not_leader "+next.client {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("resumed member answers %q, want a redirect to %s", got, next.client)
		}
	}
}

// TestSingleMemberSurvivesRestart: --raft-dir with one member is a
// durable single server: a held lock and a counter survive a restart (the
// lease is lengthened by the time the server was down, never shortened).
func TestSingleMemberSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	ms := startMembers(t, 1)
	m := ms[0]
	_, _ = leader(t, ms, nil, 15*time.Second)
	holder := dialMember(t, m)
	grantFence(t, holder.do("l", "kept", "0 120", 20*time.Second))
	if got := holder.do("incr", "visits", "5", 20*time.Second); got != "ok 5" {
		t.Fatalf("incr: %q", got)
	}
	m.signal(syscall.SIGKILL)
	m.start()
	_, _ = leader(t, ms, nil, 15*time.Second)
	c := dialMember(t, m)
	if got := c.do("l", "kept", "0", 20*time.Second); got != "timeout" {
		t.Fatalf("lock held before the restart: %q, want timeout", got)
	}
	// leader() itself incremented "probe"; "visits" is untouched by it.
	if got := c.do("incr", "visits", "1", 20*time.Second); got != "ok 6" {
		t.Fatalf("counter after the restart: %q, want ok 6", got)
	}
}
