package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// applier runs the engine commands of a hub's sessions and endpoints. The
// mode is chosen once, when the hub is made: a single node's applier
// (local.go) runs them on the hub's own engine and answers at once, or
// owes the answer of a request that waits; a cluster member's
// (replicated.go) proposes them to the replicated log and owes every
// answer, which comes back when the entry applies (Hub.Deliver). Either
// way a session sees one thing: a reply now, or one reply owed, and owed
// replies come back in the order the requests were made, through the
// transport's Post (an endpoint's Post). Sessions count what they are
// owed (owed.go) and never ask which mode they are in; what the modes
// decide differently they decide through the applier's methods.
type applier interface {
	// open returns the id of a new session.
	open(now timerwheel.Instant) engine.SessionID
	// apply runs c, a request or a cancel of session c.Session, and
	// overwrites *r. done: *r is its answer now, and receivers how many
	// receivers the pushes of a signal reached. Else one answer is owed.
	// fx is the caller's scratch for the command's effects, empty again
	// on return. c and r may point into the caller's scratch: the
	// applier copies what it keeps.
	apply(c *engine.Command, fx *engine.Effects, r *engine.Result) (receivers int, done bool)
	// close ends session id; a local applier leaves the cleanup's
	// effects in fx, for the caller to route once the session is
	// forgotten (nothing goes to the session that closed).
	close(id engine.SessionID, at timerwheel.Instant, fx *engine.Effects)
	// drain starts a graceful drain of what the applier runs.
	drain(at timerwheel.Instant)
	// pipelined reports whether sessions go on parsing while answers
	// are owed (up to maxOwed): true where the log keeps each
	// connection's requests in order (cluster.FSM); a single node's
	// sessions stop, as dflockd reads nothing more of a connection
	// while its request waits (spec §A.6), which is what orders them
	// there. It also decides what a peer's going means (PeerClosed).
	pipelined() bool
	// engine is the state for reads (stats, godistlock's STAT): the
	// hub's engine, or the local replica (nil before a cluster's first
	// entry).
	engine() *engine.Engine
	// stats is the stats document (every array, or the five keys of v1
	// and v2), at now on a single node, at the replica's time with the
	// "cluster" object on a member.
	stats(all bool, now timerwheel.Instant, conns int) *vocab.Stats
	// leading reports whether requests are accepted here; leaderAddr is
	// the leader's client address for redirects ("" when unknown or on a
	// single node).
	leading() bool
	leaderAddr() string
	// stateNow is the time of the engine state at now: now itself, or
	// on a member the replica's (the log's) time.
	stateNow(now timerwheel.Instant) timerwheel.Instant
	// local returns the hub's session id of engine session id, whose
	// owner connection number is connID, if it is one of this hub's: on
	// a single node, id itself; on a member that leads, the hub's
	// number of the connection (the replicated state numbers them
	// epoch<<32 | that number).
	local(id engine.SessionID, connID uint64) (engine.SessionID, bool)
	// tenant bounds the engine's tenant named name (an identity with
	// quotas, engine/tenant.go) by q and, when id is not 0, makes it
	// session id's, before the session's next request runs: a single
	// node's engine does it now; a member proposes it to the log
	// (cluster.OpTenant), ahead of the session's next request, so every
	// replica counts the identity's claims and keys alike. A member
	// that does not lead does nothing: its sessions are refused anyway.
	tenant(id engine.SessionID, name string, q policy.Quota)
}

// maxOwed bounds the answers a pipelining session is owed at once (and so
// what a replica's engine may hold queued behind a request that waits,
// engine/queue.go).
const maxOwed = 128
