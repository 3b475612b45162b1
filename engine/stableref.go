package engine

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Stable refs and orphans, a cluster's (spec §G). A connection that
// presented `stable-ref <ref>` and goes while the orphan TTL is on leaves
// its session behind as the orphan of its ref, detached (KindDetach): its
// holds and queue places stay. A connection with no session yet whose
// first request presents the ref takes that session over (Rebind), and
// its acquires of keys the session still holds or waits on get the held
// token or the place back (Command.Readopt). An orphan nobody took over
// within the TTL is closed like any session.
//
// Like the connections' sessions (conns.go), this is state every replica
// must agree on, so it is the engine's; its caller (a replica's FSM)
// orders the commands (which session to close or detach, when) and
// writes it into its snapshots as StableRefs. It is read and written only
// by the goroutine that applies the log, or while none applies.
type stableRefs struct {
	ttl     time.Duration
	refs    map[uint64]string // connection → the ref it presented
	readopt map[uint64]bool   // connections that took an orphan over
	orphans map[string]orphan // ref → the session its connection left
}

type orphan struct {
	sid   SessionID
	until timerwheel.Instant // closed at the first time at or after
}

// StableRefs is the stable-ref state as values, in a fixed order: the
// refs by connection, the orphans by ref.
type StableRefs struct {
	TTL     time.Duration
	Refs    []ConnRef
	Orphans []Orphan
}

// ConnRef is the ref a connection presented, and whether it took an
// orphan over with it.
type ConnRef struct {
	Conn    uint64
	Ref     string
	Readopt bool
}

// Orphan is a session left by its connection, the orphan of Ref until
// Until.
type Orphan struct {
	Ref     string
	Session SessionID
	Until   timerwheel.Instant
}

// SetOrphanTTL sets how long a session left by a connection with a ref
// stays an orphan (0: not at all).
func (e *Engine) SetOrphanTTL(d time.Duration) { e.refs.ttl = d }

// KeepRef records ref as connection conn's, which has a session (a
// stable-ref that ran in its turn): it takes nothing over.
func (e *Engine) KeepRef(conn uint64, ref string) { e.refs.set(conn, ref) }

// TakeOver records ref as connection conn's and, if conn has no session
// yet and an orphan has that ref, makes the orphan conn's session,
// connected at at.
func (e *Engine) TakeOver(conn uint64, ref string, at timerwheel.Instant) {
	r := &e.refs
	r.set(conn, ref)
	o, ok := r.orphans[ref]
	if _, busy := e.ConnSession(conn); !ok || busy {
		return
	}
	delete(r.orphans, ref)
	if r.readopt == nil {
		r.readopt = make(map[uint64]bool)
	}
	r.readopt[conn] = true
	e.Rebind(o.sid, conn, at.Tick())
}

func (r *stableRefs) set(conn uint64, ref string) {
	if r.refs == nil {
		r.refs = make(map[uint64]string)
	}
	r.refs[conn] = ref
}

// Readopts reports whether connection conn took an orphan over: its
// acquires readopt what the session holds (Command.Readopt).
func (e *Engine) Readopts(conn uint64) bool { return e.refs.readopt[conn] }

// Leaving is what becomes of a connection's session when it goes
// (LeaveConn).
type Leaving struct {
	Session SessionID // the connection's session; 0: it had none
	// Orphaned: the session stays as its ref's orphan (the caller
	// detaches it); Displaced is the older orphan of that ref, if any,
	// which the caller closes first. Else the caller closes Session.
	Orphaned  bool
	Displaced SessionID
}

// LeaveConn forgets connection conn's ref and says what becomes of its
// session: its ref's orphan, until now plus the TTL, if it presented one
// and orphans are on; else closed.
func (e *Engine) LeaveConn(conn uint64, now timerwheel.Instant) Leaving {
	r := &e.refs
	ref := r.refs[conn]
	delete(r.refs, conn)
	delete(r.readopt, conn)
	sid, ok := e.ConnSession(conn)
	if !ok {
		return Leaving{}
	}
	if ref == "" || r.ttl <= 0 {
		return Leaving{Session: sid}
	}
	l := Leaving{Session: sid, Orphaned: true}
	if old, ok := r.orphans[ref]; ok {
		l.Displaced = old.sid // two connections presented the ref
	}
	if r.orphans == nil {
		r.orphans = make(map[string]orphan)
	}
	r.orphans[ref] = orphan{sid: sid, until: now + timerwheel.Instant(r.ttl)}
	return l
}

// DueOrphans forgets the orphans whose TTL has run out by now and returns
// their sessions, in ref order, for the caller to close.
func (e *Engine) DueOrphans(now timerwheel.Instant) []SessionID {
	r := &e.refs
	if len(r.orphans) == 0 {
		return nil
	}
	var due []string
	for ref, o := range r.orphans {
		if now >= o.until {
			due = append(due, ref)
		}
	}
	slices.Sort(due)
	out := make([]SessionID, 0, len(due))
	for _, ref := range due {
		out = append(out, r.orphans[ref].sid)
		delete(r.orphans, ref)
	}
	return out
}

// Orphans is how many orphans wait to be taken over.
func (e *Engine) Orphans() int {
	if e == nil {
		return 0
	}
	return len(e.refs.orphans)
}

// StableRefs returns the stable-ref state (a snapshot's, a digest's).
func (e *Engine) StableRefs() StableRefs {
	if e == nil {
		return StableRefs{}
	}
	r := &e.refs
	st := StableRefs{TTL: r.ttl}
	for c, ref := range r.refs {
		st.Refs = append(st.Refs, ConnRef{Conn: c, Ref: ref, Readopt: r.readopt[c]})
	}
	slices.SortFunc(st.Refs, func(a, b ConnRef) int { return cmp.Compare(a.Conn, b.Conn) })
	for ref, o := range r.orphans {
		st.Orphans = append(st.Orphans, Orphan{Ref: ref, Session: o.sid, Until: o.until})
	}
	slices.SortFunc(st.Orphans, func(a, b Orphan) int { return strings.Compare(a.Ref, b.Ref) })
	return st
}

// SetStableRefs replaces the stable-ref state (a restore).
func (e *Engine) SetStableRefs(st StableRefs) {
	r := stableRefs{ttl: st.TTL}
	for _, cr := range st.Refs {
		r.set(cr.Conn, cr.Ref)
		if cr.Readopt {
			if r.readopt == nil {
				r.readopt = make(map[uint64]bool)
			}
			r.readopt[cr.Conn] = true
		}
	}
	for _, o := range st.Orphans {
		if r.orphans == nil {
			r.orphans = make(map[string]orphan)
		}
		r.orphans[o.Ref] = orphan{sid: o.Session, until: o.Until}
	}
	e.refs = r
}
