package cluster

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// countingStore counts the entries raft reads back from a log store.
type countingStore struct {
	*raft.InmemStore
	reads atomic.Int64
}

func (s *countingStore) GetLog(index uint64, log *raft.Log) error {
	s.reads.Add(1)
	return s.InmemStore.GetLog(index, log)
}

// TestEntriesAreNotReadBack: the leader replicates, and followers apply,
// the entries of a busy run from memory: the log stores are written, but
// hardly read (raft.LogCache), where every entry was read back once per
// follower by the leader and once by each follower.
func TestEntriesAreNotReadBack(t *testing.T) {
	type node struct {
		id    raft.ServerID
		store *countingStore
		node  *Node
		out   *recorder
	}
	var nodes []*node
	var servers []raft.Server
	trans := map[raft.ServerID]*raft.InmemTransport{}
	for i := range 3 {
		id := raft.ServerID(fmt.Sprint("n", i+1))
		addr, tr := raft.NewInmemTransport("")
		trans[id] = tr
		servers = append(servers, raft.Server{ID: id, Address: addr})
		nodes = append(nodes, &node{id: id, store: &countingStore{InmemStore: raft.NewInmemStore()}})
	}
	for _, a := range servers {
		for _, b := range servers {
			if a.ID != b.ID {
				trans[a.ID].Connect(b.Address, trans[b.ID])
			}
		}
	}
	for _, n := range nodes {
		n.out = newRecorder()
		nd, err := New(Config{ID: n.id, Transport: trans[n.id], Logs: n.store, Stable: n.store,
			Snapshots: raft.NewInmemSnapshotStore(), Raft: fastRaft(), Output: n.out})
		if err != nil {
			t.Fatal(err)
		}
		n.node = nd
		t.Cleanup(func() { _ = nd.Shutdown() })
		if err := nd.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	var leader *node
	for deadline := time.Now().Add(awaitFor); leader == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		for _, n := range nodes {
			if n.node.Ready() {
				leader = n
			}
		}
	}
	before := map[raft.ServerID]int64{}
	for _, n := range nodes {
		before[n.id] = n.store.reads.Load()
	}
	first, _ := leader.node.FSM().Applied()
	// One request at a time: an entry each.
	const requests = 100
	for i := range requests {
		if err := leader.node.Submit(1, req(t, "incr", "c", "1")); err != nil {
			t.Fatal(err)
		}
		if r := leader.out.next(t, 1, i, awaitFor); r.Int != int64(i+1) {
			t.Fatalf("incr %d: %+v", i, r)
		}
	}
	last, _ := leader.node.FSM().Applied()
	for _, n := range nodes {
		for deadline := time.Now().Add(awaitFor); ; time.Sleep(5 * time.Millisecond) {
			if got, _ := n.node.FSM().Applied(); got >= last {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not apply up to %d", n.id, last)
			}
		}
	}
	entries := int64(last - first)
	for _, n := range nodes {
		reads := n.store.reads.Load() - before[n.id]
		t.Logf("%s: %d entries, %d read back from its store", n.id, entries, reads)
		if reads > entries/4 {
			t.Errorf("%s read %d of %d entries back from its log store", n.id, reads, entries)
		}
	}
}
