package session

import (
	"sync"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// An Endpoint is an engine session that is not a protocol session over a
// byte stream: an HTTP session. It runs its commands through the hub
// (Call), and the hub hands it the answers it is owed through Post, from
// any goroutine, without blocking: on a single node the late answer of a
// request that waited (a grant, a timeout, an error), on a cluster member
// every answer, in the order of its calls, and a demotion's
// error_not_leader whether or not anything is owed. Only a PushEndpoint
// gets the pushes of what it registers for (listen).
type Endpoint interface {
	Post(r engine.Result)
}

// A PushEndpoint is an Endpoint that takes pushes: the HTTP API's GET
// /v1/signals stream. Push hands it one from any goroutine without
// blocking; false when its queue is full, which makes it a slow consumer
// (spec §B.9): the push does not count as received, and the endpoint is
// expected to end its stream and close. Room reports whether a Push now
// would be taken: a cluster member counts a signal's receivers before it
// routes the pushes (Hub.Deliver), as it does for sessions' backlogs.
type PushEndpoint interface {
	Endpoint
	Push(p engine.Push) bool
	Room() bool
}

// pushEndpoint returns the open endpoint id names if it takes pushes.
func (h *Hub) pushEndpoint(id engine.SessionID) PushEndpoint {
	pe, _ := h.endpoint(id).(PushEndpoint)
	return pe
}

// OpenEndpoint opens an engine session for e: it has a connection id in
// the same space as the protocol sessions', queues in the same FIFOs, and
// counts in stats' connections.
func (h *Hub) OpenEndpoint(e Endpoint) engine.SessionID {
	id := h.app.open(h.clock.Now())
	rs := h.routeShard(id)
	rs.mu.Lock()
	rs.ep[id] = e
	rs.mu.Unlock()
	h.conns.Add(1)
	return id
}

// CloseEndpoint ends an endpoint's engine session with the disconnect
// cleanup of spec §D.4 (its holds released, its waits cancelled as
// --auto-release-on-disconnect says) and routes what that did.
func (h *Hub) CloseEndpoint(id engine.SessionID) {
	rs := h.routeShard(id)
	rs.mu.Lock()
	_, ok := rs.ep[id]
	delete(rs.ep, id)
	rs.mu.Unlock()
	if !ok {
		return
	}
	h.conns.Add(-1)
	fx := effectsPool.Get().(*engine.Effects)
	h.app.close(id, h.clock.Now(), fx)
	h.Route(fx)
	h.putEffects(fx)
}

// endpoint returns the open endpoint id names, or nil.
func (h *Hub) endpoint(id engine.SessionID) Endpoint {
	rs := h.routeShard(id)
	rs.mu.RLock()
	e := rs.ep[id]
	rs.mu.RUnlock()
	return e
}

// Call runs a command of an endpoint (a request, or KindCancel to withdraw
// its request that waits) at the hub clock's time, from any goroutine.
// done: r answers it now. Else one answer is owed and comes through the
// endpoint's Post; answers owed come in the order of the calls. A cancel's
// answer is ok with Int 1 if it withdrew a request (whose answer is then
// never owed), Int 0 if none waited (its answer is on its way, or came).
// A signal's answer is KindInt with the receivers its pushes reached, as
// a session's "ok <n>" counts them, now or when it is owed (Deliver).
func (h *Hub) Call(c *engine.Command) (r engine.Result, done bool) {
	c.At = h.clock.Now()
	fx := effectsPool.Get().(*engine.Effects)
	var receivers int
	receivers, done = h.app.apply(c, fx, &r)
	h.putEffects(fx)
	if done && r.Kind == engine.KindReceivers {
		r.Kind, r.Int = engine.KindInt, int64(receivers)
	}
	return r, done
}

var effectsPool = sync.Pool{New: func() any { return new(engine.Effects) }}

// putEffects returns fx to the pool, unless a rare large use grew it.
func (h *Hub) putEffects(fx *engine.Effects) {
	fx.Reset()
	if cap(fx.List) <= keepFx {
		effectsPool.Put(fx)
	}
}

// Leading reports whether this member leads and accepts requests; a
// single node always does.
func (h *Hub) Leading() bool { return h.app.leading() }

// LeaderAddr is the leader's client address, "" when unknown or on a
// single node.
func (h *Hub) LeaderAddr() string { return h.app.leaderAddr() }

// HasLeader reports whether requests here can be served: on a single
// node, a leader, or a follower that knows its leader to redirect or
// forward to (/ready, dflockd_ready).
func (h *Hub) HasLeader() bool { return h.app.leading() || h.app.leaderAddr() != "" }

// Pipelined reports whether answers come later, in order, for every
// request (a cluster member's log), rather than at once but for a
// request that waits (a single node).
func (h *Hub) Pipelined() bool { return h.app.pipelined() }

// Stats is the stats document's content, as the stats command answers
// it: every array (all, the rf profile) or the five keys of v1 and v2;
// on a cluster member, its replica's at the cluster clock, with the
// "cluster" object.
func (h *Hub) Stats(all bool) *vocab.Stats { return h.app.stats(all, h.clock.Now(), h.Connections()) }
