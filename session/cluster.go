package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Replica is the replicated engine of a cluster node (spec §G): the
// sessions of a hub made by NewClusterHub submit their requests to it
// instead of applying them, and their results come back through the hub's
// Deliver when the log entry carrying them applies.
type Replica interface {
	// Submit proposes a request of connection conn; an error means this
	// node does not lead, and nothing was proposed.
	Submit(conn uint32, req *parse.Request) error
	// Close ends connection conn's session in the replicated state.
	Close(conn uint32)
	// Engine is the local replica, read for stats (nil before the
	// cluster's first entry).
	Engine() *engine.Engine
	// Now is the cluster clock, the time of the replica's state.
	Now() timerwheel.Instant
	// Leading reports whether this node leads and accepts Submit.
	Leading() bool
	// LeaderAddr is the leader's client address for redirects, "" when
	// unknown.
	LeaderAddr() string
	// ClusterStats is the "cluster" object of stats.
	ClusterStats() *parse.ClusterStats
}

// NewClusterHub returns the hub of a cluster node's sessions. Its
// sessions are numbered by the hub (the replica knows them by those
// numbers); it has no housekeeping of its own: the leader proposes time
// and GC.
func NewClusterHub(cfg Config, r Replica, clock timerwheel.Clock) *Hub {
	h := NewHub(cfg, nil, clock)
	h.replica = r
	return h
}

// openID returns the id of a new session: the engine's, or in cluster
// mode the hub's next connection number (never 0).
func (h *Hub) openID(now timerwheel.Instant) engine.SessionID {
	if h.replica == nil {
		var fx engine.Effects
		return h.eng.Apply(&engine.Command{Kind: engine.KindOpen, At: now}, &fx).Session
	}
	for {
		if id := h.conn.Add(1); id != 0 && h.lookup(engine.SessionID(id)) == nil && h.endpoint(engine.SessionID(id)) == nil {
			return engine.SessionID(id)
		}
	}
}

// maxAwaiting bounds the requests a session has in the log at once (and
// so what the replicated state may hold parked behind one that waits).
const maxAwaiting = 128

// submit proposes a request to the log. Several may be in flight: the
// session goes on parsing what the client pipelined (up to maxAwaiting),
// and the replies come back in log order, which is the order they were
// sent. On a node that does not lead, the answer is error_not_leader, at
// once if nothing is in flight, else after what is (retry).
//
// The request is taken by value: its address goes to an interface and so
// escapes, and a pointer to exec's request would move every request of
// the single-node path to the heap.
func (s *Session) submit(out []byte, req parse.Request) []byte {
	if s.hub.replica.Submit(uint32(s.id), &req) != nil {
		if s.awaiting > 0 {
			s.retry = true
			return out
		}
		nl := s.hub.notLeader()
		s.countReply(nl.Status)
		return appendResult(out, &nl, false)
	}
	s.awaiting++
	if s.awaiting >= maxAwaiting {
		s.waitForLog()
	}
	return out
}

// toLog reports whether exec would submit a request (rather than answer
// it on this node): only such requests may overtake replies still to
// come from the log, since theirs come back in order after them.
func (s *Session) toLog(req *parse.Request, err error) bool {
	if err != nil || !s.authed || (s.hub.draining.Load() && s.hub.cfg.Profile != parse.ProfileV1) {
		return false
	}
	switch req.Op {
	case parse.OpPing, parse.OpAuth, parse.OpStableRef, parse.OpStats:
		return false
	}
	return true
}

// waitForLog stops parsing until the replies of the requests in the log
// have come back. Reading goes on, so that the peer's going is noticed
// (PeerClosed), up to maxPausedInput unparsed (pauseIfFlooded).
func (s *Session) waitForLog() {
	s.blocked = true
}

// PeerClosed is called by a transport that read the end of its peer's
// input (EOF, or the socket failed): it reports whether the transport
// must keep the connection open for writing instead of closing it. A
// cluster session with requests in the log does: it proposes its close
// at once, behind them, so that they are answered first (a client that
// half-closes after its requests, nc -N, gets its replies) while a wait
// among them is withdrawn by the close, as a single node withdraws the
// wait of a client that went away. The close's application ends it
// (KindGone), as does a demotion, which answers everything.
func (s *Session) PeerClosed() bool {
	if s.hub.replica == nil || s.awaiting == 0 || s.closed || s.peerGone {
		return false
	}
	s.peerGone = true
	s.hub.replica.Close(uint32(s.id))
	return true
}

// pauseIfFlooded stops reading a session waiting for the log once its
// unparsed input passes maxPausedInput: it reads on meanwhile (to notice
// its peer's going), but flow control must hold back a client that
// pipelines far ahead of its replies.
func (s *Session) pauseIfFlooded(unparsed int) {
	if unparsed >= maxPausedInput && !s.readOff {
		s.pauseWhileBlocked()
	}
}

// deliverFromLog writes the reply of the oldest request in the log, or,
// for a demotion's error_not_leader, answers every request still there
// with it; then parsing resumes once nothing is left in flight.
func (s *Session) deliverFromLog(r engine.Result) {
	if r.Kind == engine.KindGone {
		if s.peerGone {
			s.t.Close() // after what is queued
		}
		return
	}
	if s.awaiting == 0 {
		return // a demotion notice for a session with nothing in the log
	}
	n := 1
	if r.Status == parse.StatusErrorNotLeader {
		n = s.awaiting // the engine never answers that: a demotion
	}
	s.flushPushes()
	sc := s.t.Scratch()
	out := sc.Out[:0]
	rf := s.hub.cfg.Profile == parse.ProfileRF
	for range n {
		s.countReply(r.Status)
		out = appendResult(out, &r, rf)
	}
	s.write(out)
	sc.Out = out[:0]
	s.awaiting -= n
	switch {
	case s.awaiting == 0 && s.peerGone:
		s.t.Close() // all answered (a demotion); nobody reads on
	case s.awaiting == 0 && s.blocked:
		s.unblock(s.hub.clock.Now())
	}
}

// notLeader is the error_not_leader reply, naming the leader if known.
func (h *Hub) notLeader() engine.Result {
	return engine.Result{Status: parse.StatusErrorNotLeader, Value: h.replica.LeaderAddr()}
}

// Deliver hands what an applied log entry did to this node's sessions:
// the reply of a session's request when hasReply (before the pushes the
// same request caused, as a single node writes them), then the effects.
// It is the cluster.Output of the node.
func (h *Hub) Deliver(conn uint32, hasReply bool, r engine.Result, fx *engine.Effects) {
	if hasReply {
		if s := h.lookup(engine.SessionID(conn)); s != nil {
			if r.Kind == engine.KindReceivers {
				r.Kind, r.Int = engine.KindInt, int64(h.receivers(fx))
			}
			s.t.Post(r)
		} else if e := h.endpoint(engine.SessionID(conn)); e != nil {
			e.Post(r) // an HTTP session's (endpoint_cluster.go)
		}
	}
	if len(fx.List) > 0 {
		h.Route(fx)
	}
}

// receivers counts the receivers Route would reach with fx's pushes.
func (h *Hub) receivers(fx *engine.Effects) (n int) {
	for i := range fx.List {
		f := &fx.List[i]
		if f.Result.Kind != engine.KindPush {
			continue
		}
		if f.Group != nil {
			for j := range f.Group {
				if m := h.lookup(f.Member(j)); m != nil && !m.Backlogged() {
					n++
					break
				}
			}
		} else if s := h.lookup(f.To); s != nil && !s.Backlogged() {
			n++
		}
	}
	return n
}

// Demoted answers error_not_leader to every session waiting for a result
// this node will no longer deliver; sessions not waiting ignore it, and
// so do endpoints (Endpoint).
func (h *Hub) Demoted() {
	nl := h.notLeader()
	for i := range h.routes {
		rs := &h.routes[i]
		rs.mu.RLock()
		for _, s := range rs.m {
			s.t.Post(nl)
		}
		for _, e := range rs.ep {
			e.Post(nl)
		}
		rs.mu.RUnlock()
	}
}

// statsOf returns the stats of the hub's engine (rf: every array; else
// the five keys of v1 and v2); zero before a cluster's first entry.
func (h *Hub) statsOf(all bool, now timerwheel.Instant) *parse.Stats {
	e := h.Engine()
	if e == nil {
		// Before the first entry applies: the document of an empty
		// engine, with its empty arrays.
		e = engine.New(engine.Config{Profile: h.cfg.Profile, Shards: 1})
	}
	var st *parse.Stats
	if h.replica != nil {
		now = h.replica.Now() // the replica's time is the log's
	}
	if all {
		st = e.Stats(now, h.Connections())
	} else {
		st = e.LockStats(now, h.Connections())
	}
	if h.replica != nil {
		st.Cluster = h.replica.ClusterStats()
	}
	return st
}
