package session

import (
	"errors"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
)

// Endpoints on a cluster hub. An endpoint (an HTTP session) of a hub made
// by NewClusterHub has a connection number from the same counter as the
// hub's protocol sessions (OpenEndpoint), and runs its requests through
// the replicated log like them: Submit proposes one, and its result comes
// back through the endpoint's Post when the entry applies (Deliver: the
// reply, or Route: the late reply of a request that waited); Withdraw
// proposes the withdrawal of a request that waits; CloseEndpoint proposes
// the connection's close. When this node stops leading, Demoted posts
// error_not_leader to every endpoint: nothing submitted before will be
// answered any more.

// ErrNoWithdraw is returned by Withdraw when the replica cannot withdraw
// a request (it has no Cancel).
var ErrNoWithdraw = errors.New("session: the replica cannot withdraw a request")

// Canceller is a Replica that can withdraw a parked request of a
// connection (cluster.Node.Cancel): tag 0 names the connection's one
// parked request. Its reply, like any other, comes back through the
// hub: ok with Int 1 if it withdrew one, Int 0 if none was parked.
type Canceller interface {
	Cancel(conn uint32, tag uint32) error
}

// Clustered reports whether the hub is a cluster member's
// (NewClusterHub).
func (h *Hub) Clustered() bool { return h.replica != nil }

// Leading reports whether this member leads and accepts Submit; a
// single node always does.
func (h *Hub) Leading() bool { return h.replica == nil || h.replica.Leading() }

// LeaderAddr is the leader's client address, "" when unknown or on a
// single node.
func (h *Hub) LeaderAddr() string {
	if h.replica == nil {
		return ""
	}
	return h.replica.LeaderAddr()
}

// HasLeader reports whether requests here can be served: on a single
// node, a leader, or a follower that knows its leader to redirect or
// forward to (/ready, dflockd_ready).
func (h *Hub) HasLeader() bool {
	return h.replica == nil || h.replica.Leading() || h.replica.LeaderAddr() != ""
}

// Submit proposes a request of endpoint id to the log (cluster hubs
// only); an error means this node does not lead and nothing was
// proposed.
func (h *Hub) Submit(id engine.SessionID, req *parse.Request) error {
	return h.replica.Submit(uint32(id), req)
}

// Withdraw proposes the withdrawal of endpoint id's parked request
// (cluster hubs only; see Canceller).
func (h *Hub) Withdraw(id engine.SessionID) error {
	c, ok := h.replica.(Canceller)
	if !ok {
		return ErrNoWithdraw
	}
	return c.Cancel(uint32(id), 0)
}

// Stats is the stats document's content, as the stats command answers
// it: every array (all, the rf profile) or the five keys of v1 and v2;
// on a cluster member, its replica's at the cluster clock, with the
// "cluster" object.
func (h *Hub) Stats(all bool) *parse.Stats { return h.statsOf(all, h.clock.Now()) }
