package cluster

import (
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/vocab"
)

// ClusterStats returns this member's "cluster" object for stats: its
// role and term, the leader, how far its log and replica are, and the
// voters with their client addresses.
func (n *Node) ClusterStats() *vocab.ClusterStats {
	// The replica first: raft's indexes, read after, are at least as far.
	applied, digest := n.fsm.Applied()
	rs := n.raft.Stats()
	num := func(k string) uint64 {
		v, _ := strconv.ParseUint(rs[k], 10, 64)
		return v
	}
	lid, _ := n.Leader()
	st := &vocab.ClusterStats{
		NodeID:        string(n.cfg.ID),
		Role:          strings.ToLower(rs["state"]),
		Term:          num("term"),
		LeaderID:      string(lid),
		LeaderAddr:    n.ClientAddr(lid),
		CommitIndex:   num("commit_index"),
		LastLogIndex:  num("last_log_index"),
		SnapshotIndex: num("last_snapshot_index"),
		AppliedIndex:  applied,
		StateDigest:   hex.EncodeToString(digest[:]),
		Voters:        []vocab.ClusterVoter{},
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				st.Voters = append(st.Voters, vocab.ClusterVoter{NodeID: string(s.ID),
					RaftAddr: string(s.Address), ClientAddr: n.ClientAddr(s.ID)})
			}
		}
	}
	return st
}
