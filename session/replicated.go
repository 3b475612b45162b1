package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Replica is the replicated engine of a cluster member (spec §G): the
// sessions of a hub made by NewClusterHub submit their requests to it,
// and their results come back through the hub's Deliver when the log
// entry carrying them applies.
type Replica interface {
	// Submit proposes a request of connection conn; an error means this
	// node does not lead, and nothing was proposed.
	Submit(conn uint32, req *vocab.Request) error
	// SubmitForeign proposes a foreign protocol's lock command of
	// connection conn (engine/foreign.go's kinds, for godistlock), as
	// Submit does. Its answer comes back marked engine.KindAnswer, even
	// for a tagged acquire that waits (Blocked), whose grant follows.
	SubmitForeign(conn uint32, c *engine.Command) error
	// ForceRelease proposes an operator's release (engine.KindForceRelease)
	// on behalf of connection conn, which gets its answer as for Submit.
	ForceRelease(conn uint32, c *engine.Command) error
	// Cancel proposes the withdrawal of connection conn's parked request
	// (tag 0: its one parked request). Its answer, like any other, comes
	// back through the hub: ok with Int 1 if it withdrew one, Int 0 if
	// none was parked.
	Cancel(conn uint32, tag uint32) error
	// Close ends connection conn's session in the replicated state.
	Close(conn uint32)
	// SetTenant proposes the bounds of the tenant named name (claims,
	// queued waiters, keys; 0 = none) and, when conn is not 0, makes it
	// that connection's (cluster.OpTenant). Nothing is answered.
	SetTenant(conn uint32, name string, claims, waiting, keys int64) error
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
	ClusterStats() *vocab.ClusterStats
}

// NewClusterHub returns the hub of a cluster member's sessions. Its
// sessions are numbered by the hub (the replica knows them by those
// numbers); it has no housekeeping of its own: the leader proposes time
// and GC.
func NewClusterHub(cfg Config, r Replica, clock timerwheel.Clock) *Hub {
	h := newHub(cfg, clock)
	h.app = &replicated{hub: h, rep: r}
	return h
}

// replicated is a cluster member's applier: every request and cancel is
// proposed to the log, and its answer is owed until the entry applies on
// this member (Hub.Deliver). A member that does not lead answers
// error_not_leader at once, naming the leader when it knows it.
type replicated struct {
	hub *Hub
	rep Replica
}

// open numbers a connection: the hub's next number (never 0) that no open
// session or endpoint has.
func (p *replicated) open(timerwheel.Instant) engine.SessionID {
	for {
		if id := engine.SessionID(p.hub.conn.Add(1)); id != 0 && p.hub.lookup(id) == nil && p.hub.endpoint(id) == nil {
			return id
		}
	}
}

func (p *replicated) apply(c *engine.Command, _ *engine.Effects, r *engine.Result) (int, bool) {
	var err error
	switch c.Kind {
	case engine.KindRequest:
		err = p.rep.Submit(uint32(c.Session), &c.Req)
	case engine.KindCancel:
		err = p.rep.Cancel(uint32(c.Session), c.Tag)
	case engine.KindTaggedAcquire, engine.KindOwnRelease, engine.KindFenceRenew, engine.KindHolder:
		err = p.rep.SubmitForeign(uint32(c.Session), c)
	case engine.KindForceRelease:
		err = p.rep.ForceRelease(uint32(c.Session), c)
	default:
		*r = engine.Result{Status: vocab.StatusError} // no other kind reaches an applier
		return 0, true
	}
	if err != nil {
		*r = p.notLeader()
		return 0, true
	}
	*r = engine.Result{}
	return 0, false
}

func (p *replicated) close(id engine.SessionID, _ timerwheel.Instant, _ *engine.Effects) {
	p.rep.Close(uint32(id))
}

// drain does nothing here: a member hands leadership over instead
// (cmd/dflockd), and its connections then get error_not_leader.
func (*replicated) drain(timerwheel.Instant) {}

func (*replicated) pipelined() bool { return true }

func (p *replicated) tenant(id engine.SessionID, name string, q policy.Quota) {
	// An error is a member that does not lead: the session's requests
	// get error_not_leader there, and nothing is counted.
	_ = p.rep.SetTenant(uint32(id), name, q.Locks, q.Waiters, q.Keys)
}

func (p *replicated) engine() *engine.Engine { return p.rep.Engine() }

func (p *replicated) stats(all bool, _ timerwheel.Instant, conns int) *vocab.Stats {
	e := p.rep.Engine()
	if e == nil {
		// Before the first entry applies: the document of an empty
		// engine, with its empty arrays.
		e = engine.New(engine.Config{Profile: p.hub.cfg.Profile, Shards: 1})
	}
	now := p.rep.Now() // the replica's time is the log's
	var st *vocab.Stats
	if all {
		st = e.Stats(now, conns)
	} else {
		st = e.LockStats(now, conns)
	}
	st.Cluster = p.rep.ClusterStats()
	return st
}

func (p *replicated) leading() bool      { return p.rep.Leading() }
func (p *replicated) leaderAddr() string { return p.rep.LeaderAddr() }

func (p *replicated) stateNow(timerwheel.Instant) timerwheel.Instant { return p.rep.Now() }

func (p *replicated) local(_ engine.SessionID, connID uint64) (engine.SessionID, bool) {
	if !p.rep.Leading() {
		return 0, false // only the leader's connections are this hub's
	}
	return engine.SessionID(uint32(connID)), true
}

// notLeader is the error_not_leader answer, naming the leader if known.
func (p *replicated) notLeader() engine.Result {
	return engine.Result{Status: vocab.StatusErrorNotLeader, Value: p.rep.LeaderAddr()}
}

// Deliver hands what an applied log entry did to this member's sessions:
// the answer to a session's request when hasReply (before the pushes the
// same request caused, as a single node writes them), then the effects.
// It is the cluster.Output of the member.
func (h *Hub) Deliver(conn uint32, hasReply bool, r engine.Result, fx *engine.Effects) {
	if hasReply {
		if r.Kind == engine.KindReceivers {
			r.Kind, r.Int = engine.KindInt, int64(h.receivers(fx))
		}
		if s := h.lookup(engine.SessionID(conn)); s != nil {
			s.t.Post(r)
		} else if e := h.endpoint(engine.SessionID(conn)); e != nil {
			e.Post(r)
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
				if m := h.lookup(f.Member(j)); m != nil {
					if !m.Backlogged() {
						n++
						break
					}
				} else if pe := h.pushEndpoint(f.Member(j)); pe != nil && pe.Room() {
					n++
					break
				}
			}
		} else if s := h.lookup(f.To); s != nil {
			if !s.Backlogged() {
				n++
			}
		} else if pe := h.pushEndpoint(f.To); pe != nil && pe.Room() {
			n++ // an HTTP signal stream
		}
	}
	return n
}

// Demoted answers error_not_leader to every session and endpoint: what
// they are owed will not come from this member any more. Those owed
// nothing ignore it.
func (h *Hub) Demoted() {
	nl := engine.Result{Status: vocab.StatusErrorNotLeader, Value: h.app.leaderAddr()}
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
