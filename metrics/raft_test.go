package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// TestRaftMetrics: a cluster member's dflockd_raft_* metrics, and the
// engine metrics left out while its replica has no engine yet.
func TestRaftMetrics(t *testing.T) {
	r := Raft{State: "follower", LeaderKnown: true, Term: 7, LastLogIndex: 42, CommitIndex: 41, AppliedIndex: 40,
		SnapshotIndex: 30, LastContact: 1500 * time.Millisecond, Voters: 3}
	hub := session.NewHub(session.Config{}, nil, timerwheel.NewMonoClock()) // no engine, as before a cluster's first entry
	reg := NewRegistry(Sources{Hub: hub, Raft: func() Raft { return r }})
	want := `
# HELP dflockd_raft_state 1 for this member's raft state (follower, candidate, leader, shutdown), 0 for the others.
# TYPE dflockd_raft_state gauge
dflockd_raft_state{state="candidate"} 0
dflockd_raft_state{state="follower"} 1
dflockd_raft_state{state="leader"} 0
dflockd_raft_state{state="shutdown"} 0
# HELP dflockd_raft_term Current raft term.
# TYPE dflockd_raft_term gauge
dflockd_raft_term 7
# HELP dflockd_raft_applied_index Index of the last entry applied to this member's replica.
# TYPE dflockd_raft_applied_index gauge
dflockd_raft_applied_index 40
# HELP dflockd_raft_last_contact_seconds Seconds since a follower last heard from its leader (absent on the leader and before any contact).
# TYPE dflockd_raft_last_contact_seconds gauge
dflockd_raft_last_contact_seconds 1.5
# HELP dflockd_raft_voters Voting members in the latest raft configuration.
# TYPE dflockd_raft_voters gauge
dflockd_raft_voters 3
# HELP dflockd_raft_leader 1 while this member leads and takes requests, else 0.
# TYPE dflockd_raft_leader gauge
dflockd_raft_leader 0
`
	names := []string{"dflockd_raft_state", "dflockd_raft_term", "dflockd_raft_applied_index",
		"dflockd_raft_last_contact_seconds", "dflockd_raft_voters", "dflockd_raft_leader"}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "dflockd_locks_held"); err != nil || n != 0 {
		t.Fatalf("engine metrics without an engine: %d, %v", n, err)
	}
	// The leader: no last contact.
	r = Raft{State: "leader", Ready: true, LeaderKnown: true, LastContact: -1, Voters: 3}
	if n, _ := testutil.GatherAndCount(reg, "dflockd_raft_last_contact_seconds"); n != 0 {
		t.Fatalf("the leader reports a last contact")
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP dflockd_raft_leader 1 while this member leads and takes requests, else 0.
# TYPE dflockd_raft_leader gauge
dflockd_raft_leader 1
`), "dflockd_raft_leader"); err != nil {
		t.Fatal(err)
	}
}

// RaftEvents count leader changes and bucket the commit and apply times,
// registered beside the scrape-time raft metrics.
func TestRaftEvents(t *testing.T) {
	ev := NewRaftEvents()
	hub := session.NewHub(session.Config{}, nil, timerwheel.NewMonoClock())
	reg := NewRegistry(Sources{Hub: hub, RaftEvents: ev})
	ev.LeaderChanged()
	ev.LeaderChanged()
	ev.ObserveCommit(3 * time.Millisecond)
	ev.ObserveApply(700 * time.Microsecond)
	ev.ObserveApply(4 * time.Second)
	want := `
# HELP dflockd_raft_leader_changes_total Leader changes this member has seen (the first leader it learnt of included).
# TYPE dflockd_raft_leader_changes_total counter
dflockd_raft_leader_changes_total 2
# HELP dflockd_raft_apply_duration_seconds On the leader: time from proposing a batch of requests to raft to its being applied to the leader's replica, per batch.
# TYPE dflockd_raft_apply_duration_seconds histogram
dflockd_raft_apply_duration_seconds_bucket{le="0.0005"} 0
dflockd_raft_apply_duration_seconds_bucket{le="0.001"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.0025"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.005"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.01"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.025"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.05"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.1"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.25"} 1
dflockd_raft_apply_duration_seconds_bucket{le="0.5"} 1
dflockd_raft_apply_duration_seconds_bucket{le="1"} 1
dflockd_raft_apply_duration_seconds_bucket{le="2.5"} 1
dflockd_raft_apply_duration_seconds_bucket{le="+Inf"} 2
dflockd_raft_apply_duration_seconds_sum 4.0007
dflockd_raft_apply_duration_seconds_count 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"dflockd_raft_leader_changes_total", "dflockd_raft_apply_duration_seconds"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "dflockd_raft_commit_duration_seconds"); err != nil || n != 1 {
		t.Fatalf("commit histogram: %d series, %v", n, err)
	}
}
