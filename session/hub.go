package session

import (
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Config tunes the sessions of a Hub. The zero value of each field means
// its default.
type Config struct {
	// Profile is the dflockd release line to answer as (--compat).
	Profile      vocab.Profile
	ReadTimeout  time.Duration // per-line read deadline; default 23 s
	WriteTimeout time.Duration // unsent output making no progress this long closes; 0 = off
	AuthToken    string        // "" = no auth handshake
	// Policy, when set, makes the server shared (acl.go): every
	// connection authenticates as one of its identities (or as the
	// AuthToken holder, who may do everything), and its requests are
	// checked. Nil: no checks, as dflockd. SetPolicy replaces it.
	Policy *policy.Policy
	// GodistlockID and Version are the <id> and <version> of the
	// godistlock codec's HELLO replies; defaults: the host name, "dev".
	GodistlockID string
	Version      string
	// Events, if set, logs per-client incidents: failed auths, protocol
	// errors, slow consumers and stuck writers cut off. It is rate
	// limited, so a flood cannot fill a disk.
	Events *ratelog.Logger
}

// Hub is the sessions of one engine: it opens them and routes the engine's
// effects to them.
type Hub struct {
	cfg Config
	// eng is a single node's engine (nil on a cluster member), whose
	// timers and GC the hub's housekeeping drives.
	eng      *engine.Engine
	clock    timerwheel.Clock
	gate     *authGate
	draining atomic.Bool
	conns    atomic.Int64 // open sessions, for stats and limits
	rtMs     int64        // read timeout in ms
	wtMs     int64        // write timeout in ms, 0 = off
	routes   [routeShards]routeShard
	counters counterSet
	// app runs the sessions' commands: on eng (local.go), or through a
	// cluster's log (replicated.go), whose connections conn numbers.
	app  applier
	conn atomic.Uint32
	// housekeeping is set by NewServerHub (core.go).
	housekeeping *housekeeping
	// acl is the policy state, nil without a policy (acl.go).
	acl *acl
}

// routeShards spreads the session index over mutexes: a fan-out looks up
// one session per receiver while others open and close.
const routeShards = 64

type routeShard struct {
	mu sync.RWMutex
	m  map[engine.SessionID]*Session
	ep map[engine.SessionID]Endpoint
	_  [32]byte
}

// NewHub returns the hub of the sessions of e, reading time from clock.
func NewHub(cfg Config, e *engine.Engine, clock timerwheel.Clock) *Hub {
	h := newHub(cfg, clock)
	h.eng = e
	h.app = &local{hub: h, eng: e}
	return h
}

// newHub returns a hub with no applier yet.
func newHub(cfg Config, clock timerwheel.Clock) *Hub {
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 23 * time.Second
	}
	if cfg.GodistlockID == "" {
		cfg.GodistlockID, _ = os.Hostname()
		if cfg.GodistlockID == "" || strings.ContainsAny(cfg.GodistlockID, " \t\r\n") {
			cfg.GodistlockID = "dflockd-ng"
		}
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	h := &Hub{
		cfg: cfg, clock: clock, gate: newAuthGate(),
		rtMs: cfg.ReadTimeout.Milliseconds(), wtMs: cfg.WriteTimeout.Milliseconds(),
	}
	if cfg.Policy != nil {
		h.acl = newACL(cfg.Policy, cfg.AuthToken)
	}
	for i := range h.routes {
		h.routes[i].m = make(map[engine.SessionID]*Session)
		h.routes[i].ep = make(map[engine.SessionID]Endpoint)
	}
	return h
}

// Engine returns the hub's engine: a single node's, or a cluster
// member's replica (nil before the cluster's first entry), for reads.
func (h *Hub) Engine() *engine.Engine { return h.app.engine() }

// Clock returns the hub's clock.
func (h *Hub) Clock() timerwheel.Clock { return h.clock }

// Protocol is the codec a session speaks.
type Protocol uint8

const (
	Dflockd    Protocol = iota // dflockd's line protocol, in the hub's profile
	Godistlock                 // the godistlock client protocol (godistlock.go)
)

// Open starts the session of a new connection on transport t, to peer,
// on the transport's goroutine.
func (h *Hub) Open(t Transport, p Protocol, peer Peer) *Session {
	now := h.clock.Now()
	id := h.app.open(now)
	s := &Session{hub: h, t: t, id: id, authed: h.cfg.AuthToken == "" && h.acl == nil,
		peerAddr: peer.Addr, halfOpen: peer.HalfOpen}
	if p == Godistlock {
		s.codec = newGodistlock()
	} else {
		s.codec = dflockdCodec{}
		if !s.authed {
			s.authKey = gateKey(peer.Addr)
		}
	}
	s.deadline = now.After(h.rtMs)
	t.SetTimer(s.deadline)
	if h.acl != nil {
		s.identifyByCertificate(p, now)
	}
	rs := h.routeShard(id)
	rs.mu.Lock()
	rs.m[id] = s
	rs.mu.Unlock()
	h.conns.Add(1)
	return s
}

func (h *Hub) routeShard(id engine.SessionID) *routeShard {
	return &h.routes[uint64(id)%routeShards]
}

// lookup returns the open session id names, or nil.
func (h *Hub) lookup(id engine.SessionID) *Session {
	rs := h.routeShard(id)
	rs.mu.RLock()
	s := rs.m[id]
	rs.mu.RUnlock()
	return s
}

// forget removes a closed session from the routes.
func (h *Hub) forget(s *Session) {
	rs := h.routeShard(s.id)
	rs.mu.Lock()
	delete(rs.m, s.id)
	rs.mu.Unlock()
	h.conns.Add(-1)
}

// Connections reports open sessions.
func (h *Hub) Connections() int { return int(h.conns.Load()) }

// Route hands effects to their sessions through their transports' Post,
// from any goroutine, and reports how many receivers its pushes reached:
// a push to a session whose unread pushes are over its bound
// (Session.Backlogged) still goes, but does not count; a queue-group push
// goes to the first member from the group's turn that is not backlogged,
// and counts once, or to the turn's member, not counting, if all are
// (spec §B.9). Effects for sessions that closed meanwhile are dropped:
// their cleanup already ran in the engine.
func (h *Hub) Route(fx *engine.Effects) (receivers int) {
	for i := range fx.List {
		f := &fx.List[i]
		to := f.To
		var s *Session
		switch {
		case f.Group != nil:
			pushed := false
			for j := range f.Group {
				id := f.Member(j)
				if m := h.lookup(id); m != nil {
					if !m.Backlogged() {
						s = m
						receivers++
						break
					}
				} else if pe := h.pushEndpoint(id); pe != nil && pe.Push(f.Result.Push) {
					receivers++
					pushed = true
					break
				}
			}
			if s == nil && !pushed {
				if s = h.lookup(to); s == nil {
					if pe := h.pushEndpoint(to); pe != nil {
						pe.Push(f.Result.Push) // full: it cuts itself off
					}
				}
			}
		case f.Result.Kind == engine.KindPush:
			if s = h.lookup(to); s != nil && !s.Backlogged() {
				receivers++
			} else if s == nil {
				// An HTTP signal stream (rare: looked up only when no
				// protocol session has the id).
				if pe := h.pushEndpoint(to); pe != nil && pe.Push(f.Result.Push) {
					receivers++
				}
			}
		default:
			r := f.Result
			if r.Kind == engine.KindReceivers {
				// A signal that ran from its session's queue (a member,
				// engine/queue.go): its pushes follow, Caused of them.
				caused := engine.Effects{List: fx.List[i+1 : i+1+min(f.Caused, len(fx.List)-i-1)]}
				r.Kind, r.Int = engine.KindInt, int64(h.receivers(&caused))
			}
			if s = h.lookup(to); s == nil {
				if e := h.endpoint(to); e != nil {
					e.Post(r)
				}
				continue
			}
			s.t.Post(r)
			continue
		}
		if s == nil {
			continue
		}
		if f.Result.Kind == engine.KindPush {
			s.backlog.queued.Add(int64(pushLen(&f.Result.Push)))
		}
		s.t.Post(f.Result)
	}
	return receivers
}

// Drain starts a graceful drain (spec §D.5): parked requests end with
// error, new requests of the v2 and rf profiles get error_draining and a
// close; v1 sessions go on being served. Safe from any goroutine.
func (h *Hub) Drain() {
	h.draining.Store(true)
	h.app.drain(h.clock.Now())
}

// Draining reports whether a drain has started.
func (h *Hub) Draining() bool { return h.draining.Load() }

// GC prunes idle keys (spec §D.6); a timer calls it every --gc-interval.
func (h *Hub) GC() {
	var fx engine.Effects
	h.eng.Apply(&engine.Command{Kind: engine.KindGC, At: h.clock.Now()}, &fx)
	h.Route(&fx)
}

// Advance fires the engine timers of shard i due by now and routes what
// they did; it returns the shard's next deadline (a timer driver's target).
func (h *Hub) Advance(i int, fx *engine.Effects) (timerwheel.Tick, bool) {
	next, ok := h.eng.AdvanceShard(i, h.clock.Now(), fx)
	h.Route(fx)
	fx.Reset()
	if cap(fx.List) > keepFx {
		fx.List = nil // a mass expiry's effects are not kept
	}
	return next, ok
}

func pushLen(p *engine.Push) int { return parse.PushLen(p.Kind, p.A, p.B) }
