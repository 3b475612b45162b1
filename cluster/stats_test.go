package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// statsOf asks a member for stats and returns its cluster object.
func statsOf(t *testing.T, s *server) vocab.ClusterStats {
	t.Helper()
	got := dial(t, s).do("stats", "_", "_")
	var doc struct {
		Locks   []json.RawMessage   `json:"locks"`
		Cluster *vocab.ClusterStats `json:"cluster"`
	}
	if !strings.HasPrefix(got, "ok ") || json.Unmarshal([]byte(got[3:]), &doc) != nil || doc.Cluster == nil {
		t.Fatalf("stats: %q", got)
	}
	return *doc.Cluster
}

// TestClusterStats: every member's stats carry the cluster object: one
// leader and its client address as every member sees it, the voters, and
// replicas that reach the same applied index with the same digest.
func TestClusterStats(t *testing.T) {
	ss := startServersWith(t, 3, steadyRaft)
	l := leaderOf(t, ss, nil)
	if got := dial(t, l).do("incr", "n", "7"); got != "ok 7" {
		t.Fatalf("incr: %q", got)
	}
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(20 * time.Millisecond) {
		var cs []vocab.ClusterStats
		for _, s := range ss {
			cs = append(cs, statsOf(t, s))
		}
		leaders := 0
		same := true
		for i, c := range cs {
			if c.NodeID != string(ss[i].id) || len(c.Voters) != 3 || c.Term == 0 || len(c.StateDigest) != 64 {
				t.Fatalf("member %d: %+v", i, c)
			}
			if c.Role == "leader" {
				leaders++
				if c.NodeID != string(l.id) {
					t.Fatalf("%s says it leads; %s does", c.NodeID, l.id)
				}
			} else if c.Role != "follower" {
				t.Fatalf("member %d role %q", i, c.Role)
			}
			if c.LeaderID != string(l.id) || c.LeaderAddr != l.ln.Addr().String() {
				t.Fatalf("member %d follows %q at %q, want %s at %s", i, c.LeaderID, c.LeaderAddr, l.id, l.ln.Addr())
			}
			if c.AppliedIndex > c.CommitIndex || c.CommitIndex > c.LastLogIndex {
				t.Fatalf("member %d: applied %d, commit %d, last %d", i, c.AppliedIndex, c.CommitIndex, c.LastLogIndex)
			}
			if c.AppliedIndex != cs[0].AppliedIndex {
				same = false
			} else if c.StateDigest != cs[0].StateDigest {
				t.Fatalf("members %s and %s applied %d entries and differ: %s vs %s", c.NodeID, cs[0].NodeID,
					c.AppliedIndex, c.StateDigest, cs[0].StateDigest)
			}
		}
		if leaders != 1 {
			t.Fatalf("%d leaders", leaders)
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("members never reported the same applied index together")
		}
	}
}
