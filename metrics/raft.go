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

// RaftEvents are a cluster member's raft metrics that are counted as
// things happen rather than read at a scrape: leader changes, and the
// leader's commit and apply times (cluster.Observer, which cmd/dflockd
// feeds with these methods). One observation per leader change or per
// batch, never per request.
type RaftEvents struct {
	leaderChanges prometheus.Counter
	commit, apply prometheus.Histogram
}

// raftLatencyBuckets span a commit on one machine's fsync (under a
// millisecond) to one stuck behind a slow disk or a lost follower
// (seconds); past 2.5 s an election timeout has long passed.
var raftLatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// NewRaftEvents returns the instruments, at zero; NewRegistry registers
// them when Sources.RaftEvents names them.
func NewRaftEvents() *RaftEvents {
	return &RaftEvents{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dflockd_raft_leader_changes_total",
			Help: "Leader changes this member has seen (the first leader it learnt of included).",
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dflockd_raft_commit_duration_seconds",
			Help:    "On the leader: time from appending an entry to its raft log to the entry being committed and handed to the replica, per entry (one batch of requests each).",
			Buckets: raftLatencyBuckets,
		}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dflockd_raft_apply_duration_seconds",
			Help:    "On the leader: time from proposing a batch of requests to raft to its being applied to the leader's replica, per batch.",
			Buckets: raftLatencyBuckets,
		}),
	}
}

// LeaderChanged counts a leader change.
func (e *RaftEvents) LeaderChanged() { e.leaderChanges.Inc() }

// ObserveCommit records one entry's commit time.
func (e *RaftEvents) ObserveCommit(d time.Duration) { e.commit.Observe(d.Seconds()) }

// ObserveApply records one batch's apply time.
func (e *RaftEvents) ObserveApply(d time.Duration) { e.apply.Observe(d.Seconds()) }

func (e *RaftEvents) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.leaderChanges, e.commit, e.apply}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
