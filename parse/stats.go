package parse

import (
	"encoding/json"

	"github.com/valyala/bytebufferpool"
)

// Stats is the content of the stats document (spec §F.1), as the engine
// reports it; AppendStats encodes it in a profile's shape. Arrays are
// never nil (the document shows [], §I.24) and sorted by key, so the same
// state always encodes the same.
type Stats struct {
	Connections    int
	Locks          []LockStat
	Semaphores     []SemStat
	RWLocks        []RWStat
	IdleLocks      []IdleStat
	IdleSemaphores []IdleStat
	Counters       []CounterStat
	KVEntries      []KVStat
	Lists          []ListStat
	SignalChannels []SignalStat
	WatchChannels  []WatchStat
	Barriers       []BarrierStat
	// Cluster is a cluster member's view of its cluster (nil on a
	// single node).
	Cluster *ClusterStats
}

// ClusterStats is the "cluster" object of a cluster member's stats (spec
// §F.1 V2C): who it is, its role and term, whom it follows, how far its
// log and replica are, and the voters. AppliedIndex and StateDigest are
// read together: two members that report the same index report the same
// digest, unless their replicas diverged.
type ClusterStats struct {
	NodeID        string         `json:"node_id"`
	Role          string         `json:"role"` // leader, follower, candidate, shutdown
	Term          uint64         `json:"term"`
	LeaderID      string         `json:"leader_id"`
	LeaderAddr    string         `json:"leader_addr"` // the leader's client address
	CommitIndex   uint64         `json:"commit_index"`
	LastLogIndex  uint64         `json:"last_log_index"`
	SnapshotIndex uint64         `json:"snapshot_index"`
	AppliedIndex  uint64         `json:"applied_index"`
	StateDigest   string         `json:"state_digest"`
	Voters        []ClusterVoter `json:"voters"`
}

// ClusterVoter is a voting member.
type ClusterVoter struct {
	NodeID     string `json:"node_id"`
	RaftAddr   string `json:"raft_addr"`
	ClientAddr string `json:"client_addr"`
}

// LockStat: Fence is shown by the rf profile only.
type LockStat struct {
	Key            string  `json:"key"`
	OwnerConnID    uint64  `json:"owner_conn_id"`
	LeaseExpiresIn float64 `json:"lease_expires_in_s"`
	Waiters        int     `json:"waiters"`
	Fence          uint64  `json:"fence,omitempty"`
}

// RWStat: Fence is the highest among the holders (spec §F.1).
type RWStat struct {
	Key     string `json:"key"`
	Readers int    `json:"readers"`
	Writer  bool   `json:"writer"`
	Fence   uint64 `json:"fence,omitempty"`
	Waiters int    `json:"waiters"`
}

type SemStat struct {
	Key     string `json:"key"`
	Limit   int    `json:"limit"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
}

type IdleStat struct {
	Key   string  `json:"key"`
	IdleS float64 `json:"idle_s"`
}

type CounterStat struct {
	Key   string  `json:"key"`
	Value int64   `json:"value"`
	IdleS float64 `json:"idle_s"`
}

type KVStat struct {
	Key      string  `json:"key"`
	ValueLen int     `json:"value_len"`
	TTL      int64   `json:"ttl"` // seconds left, 0 = none
	IdleS    float64 `json:"idle_s"`
}

type ListStat struct {
	Key        string  `json:"key"`
	Len        int     `json:"len"`
	PopWaiters int     `json:"pop_waiters,omitempty"`
	IdleS      float64 `json:"idle_s"`
}

type SignalStat struct {
	Pattern   string `json:"pattern"`
	Group     string `json:"group,omitempty"`
	Listeners int    `json:"listeners"`
}

type WatchStat struct {
	Pattern  string `json:"pattern"`
	Watchers int    `json:"watchers"`
}

type BarrierStat struct {
	Key          string  `json:"key"`
	Count        int     `json:"count"`
	Participants int     `json:"participants"`
	IdleS        float64 `json:"idle_s"`
}

// statsDocRF is the document of dflockd's redis-feats line: its keys in
// its order. That line sends signal_channels and watch_channels as null
// when there are none (nil slices), every other array as [].
type statsDocRF struct {
	Connections    int           `json:"connections"`
	Locks          []LockStat    `json:"locks"`
	Semaphores     []SemStat     `json:"semaphores"`
	RWLocks        []RWStat      `json:"rw_locks"`
	IdleLocks      []IdleStat    `json:"idle_locks"`
	IdleSemaphores []IdleStat    `json:"idle_semaphores"`
	Counters       []CounterStat `json:"counters"`
	KVEntries      []KVStat      `json:"kv_entries"`
	Lists          []ListStat    `json:"lists"`
	SignalChannels []SignalStat  `json:"signal_channels"`
	WatchChannels  []WatchStat   `json:"watch_channels"`
	Barriers       []BarrierStat `json:"barriers"`
	Cluster        *ClusterStats `json:"cluster,omitempty"`
}

// statsDocV2 is the document of dflockd v1.10 and v2: these five keys
// only (spec §F.1).
type statsDocV2 struct {
	Connections    int        `json:"connections"`
	Locks          []LockStat `json:"locks"`
	Semaphores     []SemStat  `json:"semaphores"`
	IdleLocks      []IdleStat `json:"idle_locks"`
	IdleSemaphores []IdleStat `json:"idle_semaphores"`
	// Cluster: a cluster member's extra object (V2C).
	Cluster *ClusterStats `json:"cluster,omitempty"`
}

// AppendStats appends the stats document of profile p (one line, no LF):
// v1 and v2 the five keys of dflockd v1.10 and v2, rf that line's
// document. Only rf shows the fences of locks. (The state of the
// redis-feats primitives, which every profile serves, is in the rf
// document only, as in dflockd; the fence allocator's is in /metrics.)
func AppendStats(dst []byte, st *Stats, p Profile) []byte {
	var doc any
	if p == ProfileRF {
		doc = &statsDocRF{
			Connections: st.Connections, Locks: st.Locks, Semaphores: st.Semaphores, RWLocks: st.RWLocks,
			IdleLocks: st.IdleLocks, IdleSemaphores: st.IdleSemaphores, Counters: st.Counters,
			KVEntries: st.KVEntries, Lists: st.Lists, SignalChannels: nilIfEmpty(st.SignalChannels),
			WatchChannels: nilIfEmpty(st.WatchChannels), Barriers: st.Barriers, Cluster: st.Cluster,
		}
	} else {
		doc = &statsDocV2{Connections: st.Connections, Locks: withoutFences(st.Locks), Semaphores: st.Semaphores,
			IdleLocks: st.IdleLocks, IdleSemaphores: st.IdleSemaphores, Cluster: st.Cluster}
	}
	buf := bytebufferpool.Get()
	defer bytebufferpool.Put(buf)
	if err := json.NewEncoder(buf).Encode(doc); err != nil {
		panic("parse: stats document does not encode: " + err.Error())
	}
	b := buf.B
	return append(dst, b[:len(b)-1]...) // Encode ends with LF; the reply adds its own
}

// nilIfEmpty makes an empty array encode as null.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// withoutFences returns locks with their fences zeroed (omitted), copying
// only if one is set.
func withoutFences(locks []LockStat) []LockStat {
	for i := range locks {
		if locks[i].Fence != 0 {
			out := make([]LockStat, len(locks))
			for j, l := range locks {
				l.Fence = 0
				out[j] = l
			}
			return out
		}
	}
	return locks
}
