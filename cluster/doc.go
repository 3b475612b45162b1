// Package cluster replicates the engine over raft (hashicorp/raft): the
// building blocks of dflockd-ng's cluster mode (spec §G).
//
// The engine is the raft FSM. A node that leads gathers its connections'
// requests into batches (one raft entry each: group commit), stamps every
// batch with the cluster clock and proposes it; every replica decodes the
// same bytes (batch.go) and applies them to its engine at that instant
// (fsm.go), so all reach the same state and issue the same tokens — the
// fence counter and the token key are replicated state, seeded by the
// cluster's first entry (Init).
//
// Time. The cluster clock is the latest stamp applied. A leader stamps
// with the clock it found at its promotion plus its own monotonic time
// since (node.go, leaderClock): no wall clock is read, so nodes whose
// clocks disagree by hours agree on every deadline. Timers fire only when
// a batch's stamp reaches them: the leader proposes an empty batch when
// the engine's next deadline comes, and at least every ClockTick, so a
// failover — during which the clock stands still — can lengthen a lease
// by the time without a leader, never shorten it.
//
// Connections. A leader numbers its connections; the cluster knows them as
// epoch<<32 | number, where the epoch counts promotions. A new leader's
// Promote entry ends the sessions of earlier epochs the way a failover
// must: their waits are cancelled, their holds stay until their leases
// end (renewable and releasable by token). Results reach the node's own
// connections through its Output; followers deliver nothing.
//
// What replicas must agree on is the engine's state, snapshotted and in
// the digest: which session each connection has (engine/conns.go), the
// stable refs and orphans (engine/stableref.go), the requests queued
// behind a wait (engine/queue.go) and the tenants that quotas count in
// (engine/tenant.go, through OpTenant). The FSM holds no copy of them: it
// decodes entries, orders the engine commands they call for, delivers the
// results to this node's connections, and writes its snapshot's sections
// in their formats from the engine's state.
//
// Backups (backup.go). The leader captures the FSM's snapshot at its
// applied index into a snapshot file (package snapfile); a restore makes
// it the raft snapshot of a new cluster's members, and that cluster's
// first leader raises the fence counter above anything the backup's
// source could have issued (OpFenceFloor) before its Promote ends the
// source's sessions as a failover does.
//
// Every request but stats goes through the log, reads included, so a
// reply never shows state a later leader could lose; so do godistlock's
// lock commands (OpForeign, foreign.go), answered by tag and nonce rather
// than in order behind a wait.
package cluster
