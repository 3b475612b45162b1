package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// httpSession is one HTTP session: an engine session (an endpoint of the
// hub) named by a random id.
type httpSession struct {
	// timer is its idle expiry; first field, so a fired node converts
	// back to the session (timers.go). Guarded by the timers' lock.
	timer timerwheel.Node
	id    string // 32 lowercase hex
	conn  engine.SessionID
	ip    netip.Addr
	// owner is the identity that opened it, with a policy: no other
	// identity may use it ("" without a policy).
	owner string
	// turn serialises the session's lock calls and its close, as the
	// requests of one TCP connection are: a call sends to take it and
	// receives to give it back. A channel rather than a mutex, so that a
	// call waiting for its turn can give up when its client goes away.
	turn chan struct{}
	// gone is closed when the session starts closing: it wakes a call
	// parked in the engine (and calls waiting for the turn), which then
	// withdraw.
	gone     chan struct{}
	goneOnce sync.Once
	// inFlight counts the requests using the session (from lookup to
	// their end): the sweeper does not close a session in use.
	inFlight atomic.Int32
	lastSeen atomic.Int64 // timerwheel.Tick of the last request's end
	// replies takes the answers the hub owes the session (owed.go).
	replies *replies
}

// Post is the session's Endpoint: the hub hands it an answer it is owed,
// from any goroutine.
func (s *httpSession) Post(r engine.Result) { s.replies.post(r) }

// markGone starts closing the session: calls using it, or waiting for
// their turn, wake and end with 410.
func (s *httpSession) markGone() { s.goneOnce.Do(func() { close(s.gone) }) }

// closing reports whether the session has started closing.
func (s *httpSession) closing() bool {
	select {
	case <-s.gone:
		return true
	default:
		return false
	}
}

// sessionTable is the open sessions, by id, and their counts per client
// address for MaxSessionsPerIP.
type sessionTable struct {
	mu     sync.RWMutex
	byID   map[string]*httpSession
	perIP  map[netip.Addr]int
	closed bool // Shutdown: no new sessions
}

func (t *sessionTable) init() {
	t.byID = make(map[string]*httpSession)
	t.perIP = make(map[netip.Addr]int)
}

func (t *sessionTable) count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

func (t *sessionTable) isClosed() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.closed
}

// lookup returns the open session named id, counted in flight until the
// caller's done, or nil.
func (t *sessionTable) lookup(id string) *httpSession {
	t.mu.RLock()
	s := t.byID[id]
	if s != nil {
		// Under the read lock: the sweeper takes the write lock to
		// check inFlight, so it never reaps a session found here.
		s.inFlight.Add(1)
	}
	t.mu.RUnlock()
	return s
}

// lookupOwn is lookup for the identity that opened the session (owner
// "" without a policy): another identity's session is as unknown as one
// that is gone (nil), and the refused lookup leaves nothing behind: no
// call counted in flight (which would keep the session from the sweeper
// for ever) and its idle time not reset.
func (t *sessionTable) lookupOwn(id, owner string) *httpSession {
	s := t.lookup(id)
	if s != nil && s.owner != owner {
		s.inFlight.Add(-1)
		return nil
	}
	return s
}

// done ends a request's use of s.
func (t *sessionTable) done(s *httpSession, now timerwheel.Instant) {
	s.lastSeen.Store(int64(now.Tick()))
	s.inFlight.Add(-1)
}

// remove takes s out of the table; false if it was not in it (closed
// already).
func (t *sessionTable) remove(s *httpSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(s)
}

func (t *sessionTable) removeLocked(s *httpSession) bool {
	if t.byID[s.id] != s {
		return false
	}
	delete(t.byID, s.id)
	if n := t.perIP[s.ip] - 1; n > 0 {
		t.perIP[s.ip] = n
	} else {
		delete(t.perIP, s.ip)
	}
	return true
}

// removeIfIdle takes s out of the table if no request uses it and it has
// been idle since before deadline.
func (t *sessionTable) removeIfIdle(s *httpSession, idleMs int64, now timerwheel.Instant) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.inFlight.Load() > 0 || !now.Passed(timerwheel.Tick(s.lastSeen.Load()+idleMs)) {
		return false
	}
	return t.removeLocked(s)
}

// closeAll empties the table for Shutdown and refuses new sessions.
func (t *sessionTable) closeAll() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	all := make([]*httpSession, 0, len(t.byID))
	for _, s := range t.byID {
		all = append(all, s)
	}
	clear(t.byID)
	clear(t.perIP)
	return all
}

// newSessionID is 128 random bits in lowercase hex, as dflockd's.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b[:])
}

// validSessionID reports whether id has the form newSessionID makes.
func validSessionID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// open creates a session for a client at ip, or says which cap refused
// it. The engine session is opened under the table's lock, so that a
// Shutdown running meanwhile either sees the session or refuses it.
func (a *API) open(ip netip.Addr, owner string) (*httpSession, string) {
	t := &a.sessions
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed || a.hub.Draining():
		return nil, codeDraining
	case a.cfg.MaxSessions > 0 && len(t.byID) >= a.cfg.MaxSessions:
		return nil, codeMaxSessions
	case a.cfg.MaxSessionsPerIP > 0 && t.perIP[ip] >= a.cfg.MaxSessionsPerIP:
		return nil, codeMaxSessionsPerIP
	}
	s := &httpSession{
		timer:   timerwheel.Node{Kind: kindSession},
		ip:      ip,
		owner:   owner,
		turn:    make(chan struct{}, 1),
		gone:    make(chan struct{}),
		replies: newReplies(),
	}
	for s.id == "" || t.byID[s.id] != nil {
		s.id = newSessionID()
	}
	s.conn = a.hub.OpenEndpoint(s)
	now := a.clock.Now()
	s.lastSeen.Store(int64(now.Tick()))
	t.byID[s.id] = s
	t.perIP[ip]++
	a.timers.Reset(&s.timer, now.After(a.idleMs))
	return s, ""
}

// closeSession ends a session taken out of the table: it wakes the call
// using it, waits for that call to withdraw what it parked, then closes
// the engine session (disconnect cleanup, spec §D.4). The turn is never
// given back: calls still waiting for it see gone and answer 410.
func (a *API) closeSession(s *httpSession) {
	s.markGone()
	s.turn <- struct{}{}
	a.timers.Cancel(&s.timer)
	a.hub.CloseEndpoint(s.conn)
}

// expire runs when a session's idle timer fires: it closes the session if
// it has been idle for twice the idle timeout and no request uses it, and
// otherwise re-arms the timer for when it could be. Requests only store
// their end time; the timer catches up here, off the request path.
func (a *API) expire(s *httpSession) {
	now := a.clock.Now()
	if a.sessions.removeIfIdle(s, a.idleMs, now) {
		a.closeSession(s)
		return
	}
	next := timerwheel.Tick(s.lastSeen.Load() + a.idleMs)
	if s.inFlight.Load() > 0 || now.Passed(next) {
		next = now.After(a.idleMs) // in use: look again later
	}
	// Not if a close has begun: closeSession marks the session gone
	// before it cancels the timer, so the timer is never left armed.
	a.timers.ResetUnless(&s.timer, next, s.closing)
}

// clientIP is the address a request came from, IPv4-mapped addresses
// unmapped so a client counts once however it connects.
func clientIP(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// createSession is POST /v1/sessions. The body may be empty, {}, or
// carry V2C's stable_ref, accepted and inert on a single node as the TCP
// stable-ref command is; on a cluster member it is presented as that
// command is (presentStableRef).
func (a *API) createSession(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if msg := readJSON(w, r, &body, true); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	if body.StableRef != nil {
		if msg := checkStableRef(*body.StableRef); msg != "" {
			writeError(w, http.StatusBadRequest, codeBadRequest, msg)
			return
		}
	}
	s, refused := a.open(clientIP(r), callerName(r))
	if s == nil {
		writeError(w, http.StatusServiceUnavailable, refused, "")
		return
	}
	if id := callerIdentity(r); id != nil {
		// The identity's quotas count the session's claims and keys as
		// its connections' (a single node's engine).
		a.hub.AttachIdentity(s.conn, id)
	}
	if body.StableRef != nil && a.cfg.Cluster != nil && !a.presentStableRef(w, r, s, *body.StableRef) {
		return
	}
	writeJSON(w, http.StatusOK, sessionReply{
		SessionID:    s.id,
		IdleTimeoutS: int64(a.cfg.SessionIdleTimeout.Seconds()),
	})
}

// presentStableRef sends `stable-ref <ref>` as the first request of the
// new session s on a cluster member, as a TCP client's first request.
// The replicated state then keeps s's engine session as an orphan of ref
// for --orphan-ttl once s ends (deleted, expired, or its leader gone),
// and, if such an orphan is there now, s takes it over: its locks and
// queue places, an acquire of a key it holds answering the held token.
// That is how an HTTP session's claims outlive a failover: the session
// id lives on the leader that made it, the ref in the log. On failure it
// answers, closes s and returns false.
func (a *API) presentStableRef(w http.ResponseWriter, r *http.Request, s *httpSession, ref string) bool {
	s.inFlight.Add(1) // not idle while it is set up
	token := []byte(ref)
	if s.owner != "" { // a policy: the ref is the identity's own, as on TCP
		token = session.IdentityRef(s.owner, token)
	}
	res, end := a.call(r.Context(), s, &vocab.Request{Op: vocab.OpStableRef, Token: token})
	a.sessions.done(s, a.clock.Now())
	if end == answered && res.Status == vocab.StatusOK {
		return true
	}
	if a.sessions.remove(s) {
		a.closeSession(s)
	}
	switch {
	case end == answered && res.Status == vocab.StatusErrorNotLeader:
		a.writeNotLeader(w)
	case end == clientGone:
		writeError(w, http.StatusRequestTimeout, codeClientCanceled, "the client went away before the answer")
	default:
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, "the stable_ref was not recorded")
	}
	return false
}

// deleteSession is DELETE /v1/sessions/{id}.
func (a *API) deleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validSessionID(id) {
		writeError(w, http.StatusBadRequest, codeBadRequest, "invalid session id")
		return
	}
	s := a.sessions.lookupOwn(id, callerName(r))
	if s == nil {
		a.unknownSession(w)
		return
	}
	a.sessions.done(s, a.clock.Now()) // not in use while it waits for the turn
	if !a.sessions.remove(s) {
		writeError(w, http.StatusGone, codeSessionGone, "") // a concurrent DELETE or expiry won
		return
	}
	a.closeSession(s)
	w.WriteHeader(http.StatusNoContent)
}

// pingSession is POST /v1/sessions/{id}/ping: it keeps the session alive.
func (a *API) pingSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !validSessionID(id) {
		writeError(w, http.StatusBadRequest, codeBadRequest, "invalid session id")
		return
	}
	s := a.sessions.lookupOwn(id, callerName(r))
	if s == nil {
		a.unknownSession(w)
		return
	}
	a.sessions.done(s, a.clock.Now())
	w.WriteHeader(http.StatusNoContent)
}

// requestSession resolves the X-Dflockd-Session header of a lock call; on
// failure it answers (400 without the header, 410 for an unknown,
// deleted or expired session) and returns nil. The caller ends its use
// with sessions.done.
func (a *API) requestSession(w http.ResponseWriter, r *http.Request) *httpSession {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, sessionHeader+" header required")
		return nil
	}
	s := a.sessions.lookupOwn(id, callerName(r))
	if s == nil {
		// Another identity's session is as unknown as one that is
		// gone: its existence is not the caller's to learn.
		a.unknownSession(w)
		return nil
	}
	return s
}

// unknownSession answers a request naming a session this member does
// not have: 410 session_gone, as dflockd answers. On a cluster member
// the detail says why a session the client had may be gone: sessions
// live on the leader that opened them (their ids are never replicated)
// and end with its leadership, so after a failover the new leader does
// not know them; the holds they had stay until their leases end.
func (a *API) unknownSession(w http.ResponseWriter) {
	detail := ""
	if a.cfg.Cluster != nil {
		detail = unknownSessionInCluster
	}
	writeError(w, http.StatusGone, codeSessionGone, detail)
}

// unknownSessionInCluster is the detail of a cluster member's 410 for an
// unknown session.
const unknownSessionInCluster = "no such session on this member: it was deleted, expired, or opened on a leader " +
	"that has since died or stepped down (sessions are the leader's and end with its leadership); " +
	"open a new session: the old one's locks stay held until their leases end, renewable and releasable by token " +
	"(with --orphan-ttl, a new session created with the old one's stable_ref takes them over)"

// sessionHeader names a lock call's session.
const sessionHeader = "X-Dflockd-Session"
