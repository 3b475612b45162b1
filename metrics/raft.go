package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Raft is what a scrape reads of a cluster member's raft (cluster mode;
// cmd/dflockd fills it from cluster.Node): the dflockd_raft_* metrics
// of spec §F.2 (V2C).
type Raft struct {
	// State is raft's: leader, follower, candidate or shutdown.
	State string
	// Ready: this member leads and takes requests (its promotion is
	// done), the leader of dflockd_raft_leader.
	Ready bool
	// LeaderKnown: the member knows who leads.
	LeaderKnown bool
	Term        uint64
	// The log: the last index, the last committed, the last applied to
	// the replica, the last in a snapshot.
	LastLogIndex, CommitIndex, AppliedIndex, SnapshotIndex uint64
	// LastContact is how long ago a follower last heard from its
	// leader; negative: never, or this member leads.
	LastContact time.Duration
	// Voters in the latest configuration.
	Voters int
}

// raftStates are the values of dflockd_raft_state's label, each 1 or 0.
var raftStates = []string{"follower", "candidate", "leader", "shutdown"}

type raftCollector struct {
	read  func() Raft
	descs map[string]*prometheus.Desc
}

func newRaftCollector(read func() Raft) *raftCollector {
	c := &raftCollector{read: read, descs: map[string]*prometheus.Desc{}}
	for _, d := range []struct {
		name, help string
		labels     []string
	}{
		{"dflockd_raft_state", "1 for this member's raft state (follower, candidate, leader, shutdown), 0 for the others.", []string{"state"}},
		{"dflockd_raft_leader", "1 while this member leads and takes requests, else 0.", nil},
		{"dflockd_raft_leader_known", "1 while this member knows which member leads, else 0.", nil},
		{"dflockd_raft_term", "Current raft term.", nil},
		{"dflockd_raft_last_log_index", "Index of the last entry in this member's log.", nil},
		{"dflockd_raft_commit_index", "Index of the last entry known committed.", nil},
		{"dflockd_raft_applied_index", "Index of the last entry applied to this member's replica.", nil},
		{"dflockd_raft_snapshot_index", "Index of the last entry in this member's latest snapshot.", nil},
		{"dflockd_raft_last_contact_seconds", "Seconds since a follower last heard from its leader (absent on the leader and before any contact).", nil},
		{"dflockd_raft_voters", "Voting members in the latest raft configuration.", nil},
	} {
		c.descs[d.name] = desc(d.name, d.help, d.labels...)
	}
	return c
}

func (c *raftCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *raftCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	r := c.read()
	for _, s := range raftStates {
		gauge("dflockd_raft_state", b2f(r.State == s), s)
	}
	gauge("dflockd_raft_leader", b2f(r.Ready))
	gauge("dflockd_raft_leader_known", b2f(r.LeaderKnown))
	gauge("dflockd_raft_term", float64(r.Term))
	gauge("dflockd_raft_last_log_index", float64(r.LastLogIndex))
	gauge("dflockd_raft_commit_index", float64(r.CommitIndex))
	gauge("dflockd_raft_applied_index", float64(r.AppliedIndex))
	gauge("dflockd_raft_snapshot_index", float64(r.SnapshotIndex))
	if r.LastContact >= 0 {
		gauge("dflockd_raft_last_contact_seconds", r.LastContact.Seconds())
	}
	gauge("dflockd_raft_voters", float64(r.Voters))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
