package cluster

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// awaitFor bounds every wait for the cluster to get somewhere (a leader,
// a result, convergence). It is generous on purpose: elections and
// replication slow down on a loaded machine, and only a cluster that is
// really stuck should run it out.
const awaitFor = 20 * time.Second

// recorder is a test Output: what each local connection received, in
// order, and how often the node was demoted.
type recorder struct {
	mu      sync.Mutex
	got     map[uint32][]engine.Result
	demoted int
	changed chan struct{}
}

func newRecorder() *recorder {
	return &recorder{got: make(map[uint32][]engine.Result), changed: make(chan struct{}, 1)}
}

func (r *recorder) Deliver(conn uint32, hasReply bool, res engine.Result, fx *engine.Effects) {
	r.mu.Lock()
	if hasReply {
		r.got[conn] = append(r.got[conn], res)
	}
	for _, e := range fx.List {
		r.got[uint32(e.To)] = append(r.got[uint32(e.To)], e.Result)
	}
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) Demoted() {
	r.mu.Lock()
	r.demoted++
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// next waits for the i-th result of conn (0-based).
func (r *recorder) next(t *testing.T, conn uint32, i int, within time.Duration) engine.Result {
	t.Helper()
	deadline := time.After(within)
	for {
		r.mu.Lock()
		if len(r.got[conn]) > i {
			res := r.got[conn][i]
			r.mu.Unlock()
			return res
		}
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("conn %d: no result #%d within %v", conn, i, within)
		}
	}
}

// member is one node of an in-process cluster, with the stores that
// outlive it (a restart reuses them, as a process restart reuses disk).
type member struct {
	id     raft.ServerID
	addr   raft.ServerAddress
	logs   *raft.InmemStore
	snaps  *raft.InmemSnapshotStore
	trans  *raft.InmemTransport
	out    *recorder
	node   *Node
	offset time.Duration // added to this node's clock: clocks of nodes disagree by hours
	killed bool
}

type testCluster struct {
	t       *testing.T
	members []*member
}

// fastRaft is raft for tests: elections in about a second, not the
// default's several. Not faster: a follower that hears nothing for the
// heartbeat timeout starts an election, and a loaded machine (the race
// detector, two shared cores) stalls a node's goroutines for over 100 ms
// at times: with timeouts that short, leaders change under tests that
// rightly expect them to stay.
func fastRaft() *raft.Config {
	c := DefaultRaft()
	c.HeartbeatTimeout = 500 * time.Millisecond
	c.ElectionTimeout = 500 * time.Millisecond
	c.LeaderLeaseTimeout = 250 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	return c
}

func newTestCluster(t *testing.T, n int, init Init) *testCluster {
	t.Helper()
	c := &testCluster{t: t}
	var servers []raft.Server
	for i := range n {
		m := &member{id: raft.ServerID(fmt.Sprintf("n%d", i+1)), logs: raft.NewInmemStore(),
			snaps: raft.NewInmemSnapshotStore(), offset: time.Duration(i) * 3 * time.Hour}
		m.addr, m.trans = raft.NewInmemTransport("")
		c.members = append(c.members, m)
		servers = append(servers, raft.Server{ID: m.id, Address: m.addr, Suffrage: raft.Voter})
	}
	c.connectAll()
	for _, m := range c.members {
		c.start(m, init)
		if err := m.node.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			if !m.killed {
				_ = m.node.Shutdown()
			}
		}
	})
	return c
}

func (c *testCluster) connectAll() {
	for _, a := range c.members {
		for _, b := range c.members {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

func (c *testCluster) start(m *member, init Init) {
	c.t.Helper()
	m.out = newRecorder()
	node, err := New(Config{ID: m.id, Transport: m.trans, Logs: m.logs, Stable: m.logs, Snapshots: m.snaps,
		Raft: fastRaft(), Init: init, Shards: 4 << len(m.id), Output: m.out,
		ClockTick: 50 * time.Millisecond, Clock: offsetClock{timerwheel.NewMonoClock(), m.offset}})
	if err != nil {
		c.t.Fatal(err)
	}
	m.node, m.killed = node, false
}

// kill stops m abruptly: no leadership transfer, links cut.
func (c *testCluster) kill(m *member) {
	for _, o := range c.members {
		if o != m {
			o.trans.Disconnect(m.addr)
		}
	}
	m.trans.DisconnectAll()
	_ = m.node.Shutdown()
	m.killed = true
}

// restart brings m back on its stores with a fresh transport.
func (c *testCluster) restart(m *member, init Init) {
	m.addr, m.trans = raft.NewInmemTransport(m.addr)
	c.connectAll()
	c.start(m, init)
}

// leader waits for a ready leader among the live members.
func (c *testCluster) leader(within time.Duration) *member {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			if !m.killed && m.node.Ready() {
				return m
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no ready leader within %v", within)
	return nil
}

// converged waits until every live member applied the same index and
// reports their digests equal.
func (c *testCluster) converged(within time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var idx []uint64
		var digests [][32]byte
		for _, m := range c.members {
			if !m.killed {
				idx = append(idx, m.node.Raft().AppliedIndex())
				digests = append(digests, m.node.FSM().Digest())
			}
		}
		same := true
		for i := range idx {
			same = same && idx[i] == idx[0] && digests[i] == digests[0]
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("replicas did not converge: applied %v, digests differ: %v", idx, digests)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// offsetClock reads a monotonic clock plus a constant: the cluster clock
// must not care where each node's clock stands.
type offsetClock struct {
	c      timerwheel.Clock
	offset time.Duration
}

func (o offsetClock) Now() timerwheel.Instant { return o.c.Now() + timerwheel.Instant(o.offset) }

// req parses one request as a client would send it.
func req(t *testing.T, cmd, key, arg string) *vocab.Request {
	t.Helper()
	r, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
	if err != nil {
		t.Fatalf("%s %s %s: %v", cmd, key, arg, err)
	}
	return &r
}

// sessionOf is the engine session connection conn has in f (0: none).
func sessionOf(f *FSM, conn uint64) engine.SessionID {
	sid, _ := f.eng.ConnSession(conn)
	return sid
}

// restoredCopy snapshots f as raft does (Snapshot, then Persist) and
// restores the bytes into a new replica of the given shard count, which
// delivers as f does (the same leader's epoch). It fails the test unless
// the copy digests as f does.
func restoredCopy(t *testing.T, f *FSM, shards int, what string) (*FSM, *textOutput) {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("%s: snapshot: %v", what, err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatalf("%s: persist: %v", what, err)
	}
	out := &textOutput{}
	g := NewFSM(engine.Config{Shards: shards}, out)
	if err := g.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatalf("%s: restore: %v", what, err)
	}
	if g.Digest() != f.Digest() {
		t.Fatalf("%s: the restored replica's digest differs", what)
	}
	g.deliverEpoch.Store(f.deliverEpoch.Load())
	return g, out
}
