package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Observer is told what a member's metrics count as it happens (cluster
// knows nothing of Prometheus: cmd/dflockd hands it package metrics'
// instruments). Each func may be nil. They run on raft's goroutines and
// the proposer's, once per leader change or per batch, never per op, and
// must not block.
type Observer struct {
	// LeaderChange: this member learnt of a new leader, itself included
	// (the first one it sees counts; so does the same member leading
	// again after a span without a leader: that is a new election).
	LeaderChange func()
	// NewLeader, at the same moments, names the new leader (its raft id
	// and address), for the server's log: raft says so only on the
	// leader, and only at Info, which a server logs with --debug.
	NewLeader func(id, raftAddr string)
	// Commit, on the leader, for each entry of its term as it reaches the
	// replica: the time from raft appending the entry to the leader's log
	// to its being committed (on a quorum's disks) and handed to the
	// state machine.
	Commit func(time.Duration)
	// Apply, on the leader, for each batch of requests the proposer
	// proposes: the time from raft.Apply to the batch being applied to
	// the leader's replica (its future done), which is what a request's
	// reply waits for beyond the batching.
	Apply func(time.Duration)
}

// watchLeaders counts leader changes into o.LeaderChange. raft calls an
// observer's filter synchronously for each observation; with no channel,
// the filter is the whole observer (raft allows a nil channel): no
// goroutine, nothing queued, nothing dropped.
func watchLeaders(r *raft.Raft, changed func(raft.ServerID, raft.ServerAddress)) {
	var mu sync.Mutex
	var last raft.ServerID
	r.RegisterObserver(raft.NewObserver(nil, false, func(o *raft.Observation) bool {
		lo, ok := o.Data.(raft.LeaderObservation)
		if !ok {
			return false
		}
		mu.Lock()
		changedNow := lo.LeaderID != "" && lo.LeaderID != last
		last = lo.LeaderID
		mu.Unlock()
		if changedNow {
			changed(lo.LeaderID, lo.LeaderAddr)
		}
		return false
	}))
}

// timedFSM is the FSM as raft sees it when Observer.Commit is set: it
// notes, on the leader, how long each entry of the leader's term took
// from its append to its delivery. One clock read per delivery, whatever
// the number of entries.
type timedFSM struct {
	*FSM
	raft   atomic.Pointer[raft.Raft] // set once raft.NewRaft returns
	commit func(time.Duration)
}

func (t *timedFSM) ApplyBatch(logs []*raft.Log) []any {
	// Entries of the current term on its leader were appended by this
	// process, so their AppendedAt carries a monotonic reading; earlier
	// terms' came from another leader's clock, or from the disk.
	if r := t.raft.Load(); r != nil && r.State() == raft.Leader {
		term, now := r.CurrentTerm(), time.Now()
		for _, l := range logs {
			if l.Type == raft.LogCommand && l.Term == term && !l.AppendedAt.IsZero() {
				t.commit(now.Sub(l.AppendedAt))
			}
		}
	}
	return t.FSM.ApplyBatch(logs)
}

// Apply is ApplyBatch of one entry (raft calls it when batching is off).
func (t *timedFSM) Apply(l *raft.Log) any { return t.ApplyBatch([]*raft.Log{l})[0] }
