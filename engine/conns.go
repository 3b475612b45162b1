package engine

import (
	"cmp"
	"slices"
)

// A cluster's connections. The replicated log names a connection by its
// number (epoch<<32 | the leader's own), and which session each one has
// is state every replica must agree on: it is the engine's, here, not a
// copy its caller keeps beside it. A session opened with a ConnID is
// attached to that connection; a close or a detach (KindDetach: the
// connection went, the session stays, a cluster's orphan) parts them, and
// a takeover (Rebind) attaches the session to the connection that took
// it. A single node opens its sessions without a ConnID and never
// touches this.
//
// The index is written and read only by the goroutine that applies
// commands with a ConnID (a replica applies its log from one), or while
// none applies (a digest, a snapshot): it has no lock of its own.
type connIndex map[uint64]SessionID

// ConnSession returns the session connection conn has, if it has one.
func (e *Engine) ConnSession(conn uint64) (SessionID, bool) {
	if e == nil {
		return 0, false // a replica before its Init
	}
	id, ok := e.conns[conn]
	return id, ok
}

// ConnOf returns the connection session id is attached to, if it is.
func (e *Engine) ConnOf(id SessionID) (uint64, bool) {
	if e == nil {
		return 0, false
	}
	s := e.sessions.get(id)
	if s == nil || !s.attached {
		return 0, false
	}
	return s.connID.Load(), true
}

// ConnSessions lists every attached connection and its session, by
// connection number (a cluster's snapshot and digest).
func (e *Engine) ConnSessions() []ConnSession {
	if e == nil {
		return nil
	}
	out := make([]ConnSession, 0, len(e.conns))
	for c, id := range e.conns {
		out = append(out, ConnSession{Conn: c, Session: id})
	}
	slices.SortFunc(out, func(a, b ConnSession) int { return cmp.Compare(a.Conn, b.Conn) })
	return out
}

// ConnSession is a connection and the session it has.
type ConnSession struct {
	Conn    uint64
	Session SessionID
}

// Attach attaches open session id to connection conn (a restore reads
// which from its snapshot): what Rebind does, keeping the session's
// connection time.
func (e *Engine) Attach(conn uint64, id SessionID) {
	if s := e.sessions.get(id); s != nil {
		e.attach(s, conn)
	}
}

// attach makes conn's session s, parting s from any connection before.
func (e *Engine) attach(s *session, conn uint64) {
	e.detachConn(s)
	if e.conns == nil {
		e.conns = make(connIndex)
	}
	e.conns[conn] = s.id
	s.connID.Store(conn)
	s.attached = true
}

// detachConn parts s from its connection, if it has one.
func (e *Engine) detachConn(s *session) {
	if !s.attached {
		return
	}
	if c := s.connID.Load(); e.conns[c] == s.id {
		delete(e.conns, c)
	}
	s.attached = false
}
