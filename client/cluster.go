package client

// Cluster returns a Dialer in cluster mode for the members of a
// dflockd-ng (or dflockd v2) raft cluster, given by their client
// addresses as the members advertise them in error_not_leader replies. It
// is Dialer{Members: members}: set its other fields (TLS, auth,
// StableRef, …) before use.
//
// What cluster mode does:
//   - Requests go to the leader: a follower's error_not_leader <addr> is
//     followed to addr when addr is one of the members (MaxRedirects
//     times at most), and a leader that is unknown, cannot be reached or
//     is still taking over (it names itself) is waited for, up to
//     LeaderWait (DefaultLeaderWait), trying the members in turn.
//   - Holds (Lock, Semaphore, RWLock, Election) ride through a failover:
//     when the leader dies, the hold connects again and renews by token on
//     the new leader; Lost is closed only when the hold is really gone
//     (see Lock.Lost).
//   - Client keeps one connection for all keys, and dials the cluster
//     again when it breaks.
//
// For example:
//
//	members := client.Cluster("10.0.0.1:6388", "10.0.0.2:6388", "10.0.0.3:6388")
//	l := &client.Lock{Key: "nightly-report", LeaseTTL: 30, Dialer: members}
//	c, err := members.Dial(ctx, "") // a Conn that follows the leader
//	cl := &client.Client{Dialer: *members}
//
// It panics when no member is given.
func Cluster(members ...string) *Dialer {
	if len(members) == 0 {
		panic("client: Cluster needs the address of at least one member")
	}
	return &Dialer{Members: append([]string(nil), members...)}
}
