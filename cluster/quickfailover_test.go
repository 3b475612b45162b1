package cluster

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// killableStream is a node's raft stream whose process can "die": its
// listener closes and every connection it dialed ends, as the kernel
// does for a process killed with kill -9.
type killableStream struct {
	*Stream
	mu     sync.Mutex
	dialed []net.Conn
}

func (k *killableStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := k.Stream.Dial(addr, timeout)
	if err == nil {
		k.mu.Lock()
		k.dialed = append(k.dialed, c)
		k.mu.Unlock()
	}
	return c, err
}

// dropDialed ends the connections it dialed.
func (k *killableStream) dropDialed() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.dialed {
		_ = c.Close()
	}
	k.dialed = nil
}

type quickNode struct {
	id     raft.ServerID
	stream *killableStream
	node   *Node
	dead   bool
}

// kill ends n as kill -9 would: every connection it had, then its
// listener (a follower's probe may still reach it, and be reset), then
// the node.
func (n *quickNode) kill() {
	n.dead = true
	// A dead process's listener is gone by the time its peers see its
	// connections end: close it first. The other way round, a follower
	// could probe between the two, find the port still taking
	// connections, and (every connection having ended already) never
	// probe again.
	_ = n.stream.Close()
	n.stream.dropDialed()
	_ = n.node.Shutdown()
}

// startQuickCluster runs 3 nodes over TCP streams that tell their node
// when an accepted connection ends, with heartbeat and election timeouts
// of 2 s: left to them, a failover would take 2–4 s.
func startQuickCluster(t *testing.T) []*quickNode {
	t.Helper()
	var nodes []*quickNode
	var servers []raft.Server
	for _, id := range []string{"a", "b", "c"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var ref atomic.Pointer[Node]
		s, err := NewStream(ln, StreamConfig{Token: []byte(goodToken), OnEnded: func() {
			if n := ref.Load(); n != nil {
				n.PeerConnEnded()
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		ks := &killableStream{Stream: s}
		tr := raft.NewNetworkTransport(ks, 3, 2*time.Second, io.Discard)
		rc := fastRaft()
		rc.HeartbeatTimeout, rc.ElectionTimeout = 2*time.Second, 2*time.Second
		logs := raft.NewInmemStore()
		n, err := New(Config{ID: raft.ServerID(id), Transport: tr, Logs: logs, Stable: logs,
			Snapshots: raft.NewInmemSnapshotStore(), Raft: rc, Output: newRecorder()})
		if err != nil {
			t.Fatal(err)
		}
		ref.Store(n)
		qn := &quickNode{id: raft.ServerID(id), stream: ks, node: n}
		t.Cleanup(func() {
			if !qn.dead {
				_ = n.Shutdown()
			}
			_ = tr.Close()
		})
		nodes = append(nodes, qn)
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(s.Addr().String())})
	}
	for _, n := range nodes {
		if err := n.node.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	return nodes
}

func quickLeader(t *testing.T, nodes []*quickNode) *quickNode {
	t.Helper()
	for deadline := time.Now().Add(awaitFor); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, n := range nodes {
			if n.node.Ready() {
				return n
			}
		}
	}
	t.Fatal("no leader")
	return nil
}

// TestQuickFailoverWhenLeaderProcessDies: when the leader's process dies
// (its connections end, its raft port refuses), the followers shorten
// their timeouts, elect a new leader, and put their timeouts back.
func TestQuickFailoverWhenLeaderProcessDies(t *testing.T) {
	nodes := startQuickCluster(t)
	old := quickLeader(t, nodes)
	var rest []*quickNode
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	old.kill()

	var leader *quickNode
	for deadline := time.Now().Add(awaitFor); leader == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no new leader")
		}
		for _, n := range rest {
			if n.node.Ready() {
				leader = n
			}
		}
	}
	quick := rest[0].node.Quickened() + rest[1].node.Quickened()
	t.Logf("%s leads; %s shortened its timeouts %d times, %s %d times", leader.id,
		rest[0].id, rest[0].node.Quickened(), rest[1].id, rest[1].node.Quickened())
	if quick == 0 {
		t.Fatal("no follower saw the leader's process gone")
	}
	// Back to 2 s once the new leader is known.
	for _, n := range rest {
		for deadline := time.Now().Add(awaitFor); n.node.raft.ReloadableConfig().HeartbeatTimeout != 2*time.Second; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s kept its heartbeat timeout at %v", n.id, n.node.raft.ReloadableConfig().HeartbeatTimeout)
			}
		}
	}
}

// TestNoQuickFailoverWhileLeaderLives: connections from a leader that
// lives end (here all of them at once); the followers probe its port, find
// it listening, and keep their timeouts and their leader.
func TestNoQuickFailoverWhileLeaderLives(t *testing.T) {
	nodes := startQuickCluster(t)
	leader := quickLeader(t, nodes)
	leader.stream.dropDialed()
	for _, n := range nodes {
		if n == leader {
			continue
		}
		for deadline := time.Now().Add(awaitFor); n.node.quick.probes.Load() == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never probed its leader after its connections ended", n.id)
			}
		}
		if q := n.node.Quickened(); q != 0 {
			t.Fatalf("%s shortened its timeouts %d times while its leader lived", n.id, q)
		}
		if hb := n.node.raft.ReloadableConfig().HeartbeatTimeout; hb != 2*time.Second {
			t.Fatalf("%s heartbeat timeout %v", n.id, hb)
		}
	}
	if !leader.node.Ready() {
		t.Fatal("the leader stopped leading")
	}
}
