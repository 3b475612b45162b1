package vocab

// Stats is the content of the stats document (spec §F.1), as the engine
// reports it; parse.AppendStats encodes it in a profile's shape. Arrays are
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
