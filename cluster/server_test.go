package cluster_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// awaitFor bounds every wait for the cluster to get somewhere (a leader,
// a reply, a parked waiter). It is generous on purpose: elections and
// replication slow down on a loaded machine, and only a cluster that is
// really stuck should run it out.
const awaitFor = 20 * time.Second

// server is one member serving the dflockd protocol over TCP on a
// cluster hub, as cmd/dflockd runs it.
type server struct {
	id    raft.ServerID
	addr  raft.ServerAddress
	trans *raft.InmemTransport
	node  *cluster.Node
	ln    net.Listener
}

// transport is what serves the members' clients: the gnet loops, as
// cmd/dflockd serves plain TCP, or netconn, as it serves TLS.
type transport int

const (
	overLoops transport = iota
	overNetconn
	// godistlockNetconn serves the godistlock protocol, not dflockd's,
	// on the members' client listeners (godistlock_server_test.go).
	godistlockNetconn
)

func (tr transport) String() string { return [...]string{"loops", "netconn", "godistlock"}[tr] }

// serve serves ln's clients on hub until the test ends; stop runs before
// the member's node shuts down.
func (tr transport) serve(t *testing.T, hub *session.Hub, ln net.Listener) (stop func()) {
	served := make(chan error, 1)
	var shut func()
	if tr == overNetconn || tr == godistlockNetconn {
		proto := session.Dflockd
		if tr == godistlockNetconn {
			proto = session.Godistlock
		}
		srv := netconn.New(hub, netconn.Config{})
		go func() { served <- srv.Serve(ln, proto) }()
		shut = func() { _ = srv.Close() }
	} else {
		srv := loop.New(loop.Config{Hub: hub, Listeners: []net.Listener{ln}, Loops: 2}, hub.Clock())
		go func() { served <- srv.Serve() }()
		shut = func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = srv.Shutdown(ctx) // closes the clients still open after the second
		}
	}
	return func() {
		shut()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}
}

type replica struct{ *cluster.Node }

func startServers(t *testing.T, n int) []*server { return startServersWith(t, n, nil) }

// startServersWith starts n members, each configured by set if not nil,
// their clients served by the gnet loops.
func startServersWith(t *testing.T, n int, set func(*cluster.Config)) []*server {
	return startServersOver(t, n, set, overLoops)
}

// steadyRaft lengthens the members' raft timeouts from startServersWith's
// 100 ms to 500 ms: a loaded machine (the race detector, two shared
// cores) stalls a node's goroutines for over 100 ms at times, and with
// timeouts that short, leaders change under tests that rightly expect
// them to stay. Elections then take about a second.
func steadyRaft(c *cluster.Config) {
	c.Raft.HeartbeatTimeout, c.Raft.ElectionTimeout = 500*time.Millisecond, 500*time.Millisecond
	c.Raft.LeaderLeaseTimeout = 250 * time.Millisecond
}

// startServersOver starts n members, each configured by set if not nil,
// their clients served over tr.
func startServersOver(t *testing.T, n int, set func(*cluster.Config), tr transport) []*server {
	t.Helper()
	var ss []*server
	addrs := map[raft.ServerID]string{}
	var peers []raft.Server
	for i := range n {
		s := &server{id: raft.ServerID(fmt.Sprint("n", i+1))}
		s.addr, s.trans = raft.NewInmemTransport("")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s.ln = ln
		addrs[s.id] = ln.Addr().String()
		peers = append(peers, raft.Server{ID: s.id, Address: s.addr})
		ss = append(ss, s)
	}
	for _, a := range ss {
		for _, b := range ss {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	for _, s := range ss {
		r := &replica{}
		hub := session.NewClusterHub(session.Config{ReadTimeout: time.Minute}, r, timerwheel.NewMonoClock())
		rc := cluster.DefaultRaft()
		// Not shorter: under load (the race detector, two shared cores) a
		// node's goroutines stall for over 100 ms at times, and with
		// shorter timeouts leaders change under tests that rightly expect
		// them to stay (cluster's fastRaft).
		rc.HeartbeatTimeout, rc.ElectionTimeout = 500*time.Millisecond, 500*time.Millisecond
		rc.LeaderLeaseTimeout, rc.CommitTimeout = 250*time.Millisecond, 5*time.Millisecond
		rc.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
		logs := raft.NewInmemStore()
		cfg := cluster.Config{ID: s.id, Transport: s.trans, Logs: logs, Stable: logs,
			Snapshots: raft.NewInmemSnapshotStore(), Raft: rc, Output: hub, ClientAddrs: addrs,
			ClockTick: 50 * time.Millisecond}
		if set != nil {
			set(&cfg)
		}
		node, err := cluster.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.Node = node
		s.node = node
		stop := tr.serve(t, hub, s.ln)
		// Registered before anything can fail: serving has stopped
		// before the node its hub replicates through shuts down.
		t.Cleanup(func() {
			stop()
			_ = node.Shutdown()
		})
		if err := node.Bootstrap(peers); err != nil {
			t.Fatal(err)
		}
	}
	return ss
}

func leaderOf(t *testing.T, ss []*server, not *server) *server {
	t.Helper()
	for deadline := time.Now().Add(awaitFor); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, s := range ss {
			if s != not && s.node.Ready() {
				return s
			}
		}
	}
	t.Fatal("no leader")
	return nil
}

// client is a line-protocol connection.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, s *server) *client {
	t.Helper()
	c, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *client) send(cmd, key, arg string) {
	if _, err := fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) reply(within time.Duration) string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(within))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("no reply: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func (c *client) do(cmd, key, arg string) string {
	c.t.Helper()
	c.send(cmd, key, arg)
	return c.reply(awaitFor)
}

// leaderDo sends a request to the leader (not skip) on a new connection,
// again to the next leader while the answer is error_not_leader.
func leaderDo(t *testing.T, ss []*server, skip *server, cmd, key, arg string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		got := dial(t, leaderOf(t, ss, skip)).do(cmd, key, arg)
		if !strings.HasPrefix(got, "error_not_leader") {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s %s: still %q after 30 s", cmd, key, arg, got)
		}
	}
}

func fenceOf(t *testing.T, grant string) uint64 {
	t.Helper()
	f := strings.Fields(grant)
	if len(f) != 3 || f[0] != "ok" {
		t.Fatalf("not a grant: %q", grant)
	}
	tok, ok := fence.ParseToken([]byte(f[1]))
	if !ok {
		t.Fatalf("bad token in %q", grant)
	}
	return tok.Fence
}

// TestClusterOverTheWire: the dflockd protocol on a cluster — a follower
// redirects mutating requests to the leader's client address and serves
// stats; pipelined requests are answered in order; a leader cut off from
// the others answers its blocked waiter error_not_leader; the new leader
// keeps the lock until its lease ends, then grants it with a greater
// fence.
func TestClusterOverTheWire(t *testing.T) {
	ss := startServersWith(t, 3, steadyRaft)
	l1 := leaderOf(t, ss, nil)
	var follower *server
	for _, s := range ss {
		if s != l1 {
			follower = s
		}
	}
	f := dial(t, follower)
	if got, want := f.do("l", "k", "0 5"), "error_not_leader "+l1.ln.Addr().String(); got != want {
		t.Fatalf("lock on a follower: %q, want %q", got, want)
	}
	if got := f.do("stats", "_", "_"); !strings.HasPrefix(got, `ok {"connections":`) {
		t.Fatalf("stats on a follower: %q", got)
	}
	if got := f.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping on a follower: %q", got)
	}

	const lease = 2 * time.Second
	a := dial(t, l1)
	sent := time.Now() // before the lease can start
	g1 := a.do("l", "k", "0 2")
	f1 := fenceOf(t, g1)
	// Pipelined: answered in order, each after the one before applies.
	a.send("incr", "c", "1")
	a.send("incr", "c", "2")
	a.send("ping", "_", "_")
	a.send("incr", "c", "3")
	for _, want := range []string{"ok 1", "ok 3", "ok", "ok 6"} {
		if got := a.reply(awaitFor); got != want {
			t.Fatalf("pipelined: %q, want %q", got, want)
		}
	}

	b := dial(t, l1)
	b.send("l", "k", "30")
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
		if _, waiting := l1.node.Engine().LockCounts(); waiting == 1 {
			break // parked
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter never parked")
		}
	}
	bar := dial(t, l1)
	for _, s := range ss {
		if s != l1 {
			s.trans.Disconnect(l1.addr)
			l1.trans.Disconnect(s.addr)
		}
	}
	bar.send("barrier", "_", "_")
	if got := b.reply(awaitFor); !strings.HasPrefix(got, "error_not_leader") {
		t.Fatalf("waiter on a deposed leader: %q", got)
	}
	// A barrier on the cut-off leader, sent before it notices, is no
	// read point: its no-op never commits, so it is not answered ok.
	if got := bar.reply(awaitFor); !strings.HasPrefix(got, "error_not_leader") {
		t.Fatalf("barrier on a deposed leader: %q", got)
	}
	// Under load a second election may follow: error_not_leader is an
	// answer to ask the leader again, never a grant. While the lease runs
	// the new leader keeps the lock: a try-lock times out. A failover
	// slowed past the lease by a loaded machine makes the try-lock the
	// second grant instead; the bound below judges it like the waiter's.
	g2 := leaderDo(t, ss, l1, "l", "k", "0")
	switch {
	case g2 == "timeout":
		g2 = leaderDo(t, ss, l1, "l", "k", "60") // 60 s: only a bound on a lease that never ends
	case strings.HasPrefix(g2, "ok ") && time.Since(sent) >= lease:
	default:
		t.Fatalf("try-lock on the new leader %v after the first request, while the lease runs: %q, want timeout", time.Since(sent), g2)
	}
	f2 := fenceOf(t, g2)
	if held := time.Since(sent); held < lease {
		t.Fatalf("granted %v after the first grant was requested, before its %v lease", held, lease)
	}
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
	if got := leaderDo(t, ss, l1, "incr", "c", "0"); got != "ok 6" {
		t.Fatalf("counter on the new leader: %q, want ok 6", got)
	}
}
