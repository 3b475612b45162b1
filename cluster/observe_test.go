package cluster

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// observed counts what a member's Observer was told.
type observed struct {
	leaders, commits, applies atomic.Int64
	negative                  atomic.Bool // a duration below zero
}

func (o *observed) observer() Observer {
	check := func(d time.Duration) {
		if d < 0 {
			o.negative.Store(true)
		}
	}
	return Observer{
		LeaderChange: func() { o.leaders.Add(1) },
		Commit:       func(d time.Duration) { check(d); o.commits.Add(1) },
		Apply:        func(d time.Duration) { check(d); o.applies.Add(1) },
	}
}

// waitUntil polls cond for at most awaitFor.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(awaitFor); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Every member counts the leaders it sees; only the leader times commits
// and applies, and a new leader takes over the timing.
func TestObserverLeaderChangesAndLatency(t *testing.T) {
	const n = 3
	type obsMember struct {
		id    raft.ServerID
		addr  raft.ServerAddress
		trans *raft.InmemTransport
		node  *Node
		obs   observed
	}
	ms := make([]*obsMember, n)
	var servers []raft.Server
	for i := range ms {
		m := &obsMember{id: raft.ServerID(fmt.Sprintf("n%d", i+1))}
		m.addr, m.trans = raft.NewInmemTransport("")
		ms[i] = m
		servers = append(servers, raft.Server{ID: m.id, Address: m.addr, Suffrage: raft.Voter})
	}
	for _, a := range ms {
		for _, b := range ms {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
	for _, m := range ms {
		store := raft.NewInmemStore()
		node, err := New(Config{ID: m.id, Transport: m.trans, Logs: store, Stable: store,
			Snapshots: raft.NewInmemSnapshotStore(), Raft: fastRaft(), Output: newRecorder(),
			ClockTick: 50 * time.Millisecond, Clock: timerwheel.NewMonoClock(), Observer: m.obs.observer()})
		if err != nil {
			t.Fatal(err)
		}
		m.node = node
		t.Cleanup(func() { _ = node.Shutdown() })
		if err := node.Bootstrap(servers); err != nil {
			t.Fatal(err)
		}
	}
	leader := func(skip *obsMember) *obsMember {
		var l *obsMember
		waitUntil(t, "a ready leader", func() bool {
			for _, m := range ms {
				if m != skip && m.node.Ready() {
					l = m
					return true
				}
			}
			return false
		})
		return l
	}
	first := leader(nil)
	// Every member learns of the leader; the leader's proposer stamps a
	// batch every ClockTick, each timed once committed and once applied.
	waitUntil(t, "every member to count the first leader", func() bool {
		for _, m := range ms {
			if m.obs.leaders.Load() < 1 {
				return false
			}
		}
		return true
	})
	waitUntil(t, "the leader to time commits and applies", func() bool {
		return first.obs.commits.Load() > 2 && first.obs.applies.Load() > 2
	})
	var before [n]int64
	for i, m := range ms {
		before[i] = m.obs.leaders.Load()
		// A member that has seen one leader, not itself, never led.
		if m != first && before[i] == 1 && (m.obs.applies.Load() != 0 || m.obs.commits.Load() != 0) {
			t.Errorf("follower %s timed %d commits and %d applies; only a leader times them",
				m.id, m.obs.commits.Load(), m.obs.applies.Load())
		}
	}

	if err := first.node.TransferLeadership(); err != nil {
		t.Fatal(err)
	}
	next := leader(first)
	waitUntil(t, "every member to count the new leader", func() bool {
		for i, m := range ms {
			if m.obs.leaders.Load() <= before[i] {
				return false
			}
		}
		return true
	})
	applies := next.obs.applies.Load()
	waitUntil(t, "the new leader to time its own applies", func() bool {
		return next.obs.applies.Load() > applies+2 && next.obs.commits.Load() > 0
	})
	for _, m := range ms {
		if m.obs.negative.Load() {
			t.Errorf("%s observed a negative duration", m.id)
		}
	}
}
