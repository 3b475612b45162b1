package session

import (
	"bytes"
	"crypto/subtle"
	"crypto/x509"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Sharing one server between teams (package policy). With a policy, a
// connection is an identity from its auth line's token (or its client
// certificate), every request that touches a key is checked against the
// identity's rules before the applier runs it, and the identity's quotas
// bound what its connections do together. Without one, none of this runs:
// a session's ident stays nil and exec skips the check.
//
// The check happens where a request arrives, never in a cluster's FSM: a
// policy that changed between two members must not make replicas
// disagree about the log.

// AuthTokenIdentity names the --auth-token holder when a policy is set: it
// may do everything, as it did before policies existed.
const AuthTokenIdentity = "auth-token"

// acl is a hub's policy state; nil when no policy is configured.
type acl struct {
	pol      atomic.Pointer[policy.Policy]
	everyone *policy.Identity // the --auth-token identity, nil without one
	log      refusalLog

	mu    sync.Mutex
	usage map[string]*Usage // by identity name; only names a policy defined
}

// Usage is what one identity's connections use together, and what was
// refused it. It outlives reloads: a name keeps its figures.
type Usage struct {
	Name  string
	Conns atomic.Int64
	// The engine counts the identity's claims and keys against its
	// quotas, in its tenant of the same name (engine/tenant.go, made at
	// the identity's first auth with such a quota): see QuotaExceeded.
	// rate: the GCRA's theoretical arrival time, in clock nanoseconds.
	tat atomic.Int64
	// Denied counts refusals by class; QuotaExceeded by quota kind.
	Denied        [policy.NumClasses]atomic.Uint64
	QuotaExceeded [NumQuotaKinds]atomic.Uint64
}

// Quota kinds, for QuotaExceeded and the metrics' kind label.
const (
	QuotaLocks = iota
	QuotaWaiters
	QuotaKeys
	QuotaConns
	QuotaRate
	NumQuotaKinds
)

// QuotaKindNames are the metrics' kind labels, by quota kind.
var QuotaKindNames = [NumQuotaKinds]string{"locks", "waiters", "keys", "conns", "rate"}

func newACL(p *policy.Policy, authToken string) *acl {
	a := &acl{usage: make(map[string]*Usage)}
	if authToken != "" {
		a.everyone = policy.Everyone(AuthTokenIdentity)
	}
	a.pol.Store(p)
	return a
}

// usageOf returns the usage of the identity named name, made on first use.
func (a *acl) usageOf(name string) *Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.usage[name]
	if u == nil {
		u = &Usage{Name: name}
		a.usage[name] = u
	}
	return u
}

// Policy returns the hub's policy, or nil when none is configured.
func (h *Hub) Policy() *policy.Policy {
	if h.acl == nil {
		return nil
	}
	return h.acl.pol.Load()
}

// SetPolicy replaces the policy (a reload): each connection looks its
// identity up in the new one at its next request; one whose identity is
// gone may then do nothing. A hub made without a policy cannot get one.
func (h *Hub) SetPolicy(p *policy.Policy) bool {
	if h.acl == nil || p == nil {
		return false
	}
	h.acl.pol.Store(p)
	h.acl.mu.Lock()
	names := make([]string, 0, len(h.acl.usage))
	for name := range h.acl.usage {
		names = append(names, name)
	}
	h.acl.mu.Unlock()
	e := h.app.engine()
	for _, name := range names {
		if e == nil || e.LookupTenant(name) == nil {
			continue // no quota counted yet: its next auth sets them
		}
		var q policy.Quota // an identity gone: refused everything anyway
		if id := p.Identity(name); id != nil {
			q = id.Quota
		}
		h.app.tenant(0, name, q) // quotas change in place
	}
	return true
}

// tenantKinds maps the quota kinds the engine counts to its bounds.
var tenantKinds = [NumQuotaKinds]int{QuotaLocks: engine.TenantClaims,
	QuotaWaiters: engine.TenantWaiters, QuotaKeys: engine.TenantKeys}

// QuotaExceeded is how many requests quota kind refused to identity u.
// The engine counts the locks, waiters and keys quotas where it refuses
// (engine/tenant.go); on a cluster member that is its replica, which
// counts the refusals of every member's connections alike. The hub
// counts the rest.
func (h *Hub) QuotaExceeded(u *Usage, kind int) uint64 {
	switch kind {
	case QuotaLocks, QuotaWaiters, QuotaKeys:
		if e := h.app.engine(); e != nil {
			if t := e.LookupTenant(u.Name); t != nil {
				return t.Refused[tenantKinds[kind]].Load()
			}
		}
		return 0
	}
	return u.QuotaExceeded[kind].Load()
}

// Usages returns the figures of every identity seen so far.
func (h *Hub) Usages() []*Usage {
	if h.acl == nil {
		return nil
	}
	h.acl.mu.Lock()
	defer h.acl.mu.Unlock()
	out := make([]*Usage, 0, len(h.acl.usage))
	for _, u := range h.acl.usage {
		out = append(out, u)
	}
	return out
}

// Refusals returns the last refusals, oldest first (GET /v1/acl/log).
func (h *Hub) Refusals() []Refusal {
	if h.acl == nil {
		return nil
	}
	return h.acl.log.list()
}

// identify resolves an auth token with a policy: the --auth-token holder,
// or the identity whose token it is, or nil. Both are always compared,
// so the time taken does not tell which matched.
func (a *acl) identify(token []byte, authToken string) *policy.Identity {
	var id *policy.Identity
	if a.everyone != nil && subtle.ConstantTimeCompare(token, []byte(authToken)) == 1 {
		id = a.everyone
	}
	if byToken := a.pol.Load().ByToken(token); byToken != nil && id == nil {
		id = byToken
	}
	return id
}

// admit makes id the session's identity, counting it against id's
// connection quota; false: the quota is full (the caller closes).
func (s *Session) admit(id *policy.Identity) bool {
	u := s.hub.acl.usageOf(id.Name)
	if max := id.Quota.Conns; max > 0 && u.Conns.Add(1) > max {
		u.Conns.Add(-1)
		u.QuotaExceeded[QuotaConns].Add(1)
		s.hub.acl.log.add(Refusal{Identity: id.Name, Remote: s.remote(), Command: "auth", Reason: "quota conns reached"})
		s.hub.cfg.Events.Warn("connection refused: the identity's conns quota is reached",
			"remote", s.remote(), "identity", id.Name, "quota", max)
		return false
	} else if max == 0 {
		u.Conns.Add(1)
	}
	s.ident, s.identPol, s.usage = id, s.hub.acl.pol.Load(), u
	s.who.Store(id)
	if !id.Everything() && s.resume == nil {
		s.resume = new(policy.Resume) // made here, not on the request path
	}
	if q := id.Quota; q.Locks > 0 || q.Waiters > 0 || q.Keys > 0 {
		// The engine counts the identity's claims and keys: on a cluster
		// every replica, as the log says.
		s.hub.app.tenant(s.id, id.Name, q)
	}
	return true
}

// release gives back what the session counted against its identity.
func (s *Session) releaseIdentity() {
	if s.usage != nil {
		s.usage.Conns.Add(-1)
		s.usage = nil
	}
}

// current returns the session's identity under the hub's policy now:
// after a reload, its name is looked up again; an identity the new policy
// lacks becomes policy.Nobody.
func (s *Session) current() *policy.Identity {
	p := s.hub.acl.pol.Load()
	if p == s.identPol || s.ident.Everything() {
		return s.ident
	}
	s.identPol = p
	if id := p.Identity(s.ident.Name); id != nil {
		s.ident = id
	} else if s.ident != policy.Nobody {
		s.ident = policy.Nobody
	}
	return s.ident
}

// refused checks a parsed request against the session's identity; when
// it is refused, the refusal is counted and logged. It does not allocate
// when the request is allowed.
func (s *Session) refused(req *vocab.Request) bool {
	chk, ok := policy.CheckOf(req.Op)
	if !ok {
		return false
	}
	id := s.current()
	var allowed bool
	switch {
	case chk.Keyless:
		allowed = id.AllowsSome(chk.Class)
	case chk.Pattern:
		allowed = id.AllowsPattern(chk.Class, req.Key)
	case s.resume != nil:
		allowed = id.AllowsResume(chk.Class, req.Key, s.resume)
	default:
		allowed = id.Allows(chk.Class, req.Key)
	}
	if allowed {
		return false
	}
	_, why := id.Explain(chk.Class, req.Key, chk.Pattern)
	s.usage.Denied[chk.Class].Add(1)
	r := Refusal{Identity: id.Name, Remote: s.remote(), Command: req.Op.String(), Key: printable(req.Key),
		Class: chk.Class.String(), Reason: why}
	s.hub.acl.log.add(r)
	s.hub.cfg.Events.Warn("request denied", "identity", r.Identity, "remote", r.Remote, "command", r.Command,
		"key", r.Key, "class", r.Class, "rule", r.Reason)
	return true
}

// IdentityRef is the stable ref that a connection (or HTTP session) of
// the identity named name presents, with a policy: each identity's refs
// are its own. A ref is a name the client picks, not a secret, and
// whoever presents an orphan's ref takes its claims over (--orphan-ttl):
// without this, another identity that knew or guessed it would take
// them, holding them from their owner, whose own return would then find
// them taken. NUL is in neither a ref (printable bytes) nor an identity's
// name, so two different pairs never make the same ref. It allocates: a
// connection presents one ref at most.
func IdentityRef(name string, ref []byte) []byte {
	out := make([]byte, 0, len(name)+1+len(ref))
	out = append(append(append(out, name...), 0), ref...)
	return out
}

// deny appends the refusal of a request: error_denied, which every dflockd
// client takes for a server error (it is not ok, acquired, queued or
// timeout), with the word in its message; the connection stays open.
func (s *Session) deny(out []byte) []byte {
	s.countReply(vocab.StatusErrorDenied)
	return parse.AppendStatus(out, vocab.StatusErrorDenied)
}

// rateBurst is how much of its rate an identity may send at once (the
// GCRA's burst tolerance, plus the one request every rate allows): 50 ms
// worth, at least one request. A tenant over its rate is then spread out
// at its rate, arriving in runs of at most 50 ms worth, where a second's
// worth at once (2,000 requests at rate=2000) would queue ahead of every
// other tenant's next request on the loop.
const rateBurst = 50 * time.Millisecond

// paceBatch is how much of its rate a paced connection takes at once:
// the turns of up to 10 ms worth of the requests it has buffered (at
// least one), run together when the last of them is due. A tenant paced
// at 2,000 a second then costs the loop a wake per 20 requests, not one
// per request or two at every millisecond's tick, each of which (a
// timer, a wake of the loop, a read and a write) comes between the other
// tenants' requests; a run of 20 requests is less than its burst.
const paceBatch = 10 * time.Millisecond

// paceScan bounds the input scanned for the requests a paced connection
// has buffered.
const paceScan = 64 << 10

var newline = []byte{'\n'}

// pace takes one request from the identity's rate (a GCRA with a burst of
// rateBurst's worth) and returns how long to wait before running it: 0
// when it may run now (taken is then 1). A request that must wait is
// given its turn now, with those of up to more−1 requests behind it
// (taken in all), as for a run at once (the theoretical arrival time
// moves on), and the wait is until the last of them is due: the caller
// runs them then without asking again. The identity's paced connections
// thus wait in line, each woken at its own turn, instead of all waking
// at the same moment to contend for the one request the rate allows
// then, the others pausing again, every time. A connection holds the
// turns of at most one batch ahead, so the turns given ahead are bounded
// by the identity's connections.
func (u *Usage) pace(rate int64, now timerwheel.Instant, more int64) (wait time.Duration, taken int64) {
	interval := int64(time.Second) / rate
	burst := max(int64(rateBurst), interval) - interval // tolerance: rateBurst's worth at once
	for {
		tat := u.tat.Load()
		t := max(tat, int64(now))
		n := int64(1)
		if t-int64(now) > burst {
			n = max(more, 1)
		}
		if u.tat.CompareAndSwap(tat, t+n*interval) {
			return time.Duration(max(t+(n-1)*interval-int64(now)-burst, 0)), n
		}
	}
}

// RateWait takes one request of identity id's rate quota for a request
// that arrived over HTTP, and returns how long it must wait before it
// runs: 0 at once. The HTTP API holds the request that long, which paces
// the client (its connection gets nothing until then) as the line
// protocol's connections are paced, rather than answering errors at full
// speed. A wait counts as paced, as there.
func (h *Hub) RateWait(id *policy.Identity) time.Duration {
	if h.acl == nil || id == nil || id.Quota.Rate <= 0 {
		return 0
	}
	u := h.acl.usageOf(id.Name)
	wait, _ := u.pace(id.Quota.Rate, h.clock.Now(), 1)
	if wait > 0 {
		u.QuotaExceeded[QuotaRate].Add(1)
	}
	return wait
}

func (s *Session) remote() string {
	if a := s.peerAddr; a != nil {
		return a.String()
	}
	return ""
}

// Refusal is one refused request, as GET /v1/acl/log shows it.
type Refusal struct {
	At       time.Time `json:"at"`
	Identity string    `json:"identity"`
	Remote   string    `json:"remote"`
	Command  string    `json:"command"`
	Key      string    `json:"key,omitempty"`
	Class    string    `json:"class,omitempty"`
	Reason   string    `json:"reason"`
}

// refusalLogSize is how many refusals the log keeps: enough to see a
// misconfigured client's pattern, small enough to list in one reply.
const refusalLogSize = 128

// refusalLog is a ring of the last refusals.
type refusalLog struct {
	mu   sync.Mutex
	ring [refusalLogSize]Refusal
	n    uint64
}

func (l *refusalLog) add(r Refusal) {
	r.At = time.Now().UTC()
	l.mu.Lock()
	l.ring[l.n%refusalLogSize] = r
	l.n++
	l.mu.Unlock()
}

func (l *refusalLog) list() []Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := min(l.n, refusalLogSize)
	out := make([]Refusal, 0, n)
	for i := l.n - n; i < l.n; i++ {
		out = append(out, l.ring[i%refusalLogSize])
	}
	return out
}

// overRate reports whether the session's identity is over its rate for
// the request that starts rest, a request being lines lines (three on
// the line protocol, one on godistlock): the session is then paced,
// reading nothing until its turn (endPace), so a flood costs the server
// a timer, not a reply per request. The requests that waited have their
// turns (pace): they run then without asking again.
func (s *Session) overRate(now timerwheel.Instant, rest []byte, lines int) bool {
	rate := s.ident.Quota.Rate
	if rate <= 0 {
		return false
	}
	if s.paceTurns > 0 {
		s.paceTurns-- // a request that waited: its turn came
		return false
	}
	// The requests buffered, this one first, up to a batch.
	batch := max(rate*int64(paceBatch)/int64(time.Second), 1)
	frames := int64(bytes.Count(rest[:min(len(rest), paceScan)], newline) / lines)
	wait, taken := s.usage.pace(rate, now, min(frames, batch))
	if wait <= 0 {
		return false
	}
	s.usage.QuotaExceeded[QuotaRate].Add(uint64(taken))
	ms := (int64(wait) + int64(time.Millisecond) - 1) / int64(time.Millisecond)
	s.paced, s.paceTurns = true, int(taken)
	s.paceUntil = now.After(ms)
	if !s.paceReadOff {
		// Paused until what waits is served (endPacedRead), unless
		// output waits too: the transport then reads again by itself
		// once it has drained, and endPace resumes at each turn, as
		// this pauses at each wait (sent notes output queued later).
		s.paceReadOff = s.t.PauseRead() && s.t.Unsent() == 0
	}
	s.t.SetTimer(s.paceUntil)
	return true
}

// endPace ends the wait of a paced session whose turn came; it reports
// whether the transport should serve the input that waited. Reading stays
// paused until that input is served (paceReadOff, endPacedRead): a
// session with more waiting than its turn is paced again at once, and
// its reading then costs no resume and pause in between.
func (s *Session) endPace(now timerwheel.Instant) bool {
	if !now.Passed(s.paceUntil) {
		return false
	}
	s.paced = false
	if !s.paceReadOff && !s.paused && !s.readOff {
		s.t.ResumeRead()
	}
	s.deadline = now.After(s.hub.rtMs) // not read meanwhile
	return true
}

// endPacedRead reads again once a session's pacing is over and what
// waited has been served, unless something else keeps reading paused.
func (s *Session) endPacedRead() {
	s.paceReadOff = false
	if !s.paused && !s.readOff {
		s.t.ResumeRead()
	}
}

// scopeStats is the stats document an identity may see: the entries of
// keys it may observe, and its own connections.
func scopeStats(st *vocab.Stats, id *policy.Identity, u *Usage) *vocab.Stats {
	id.ScopeStats(st)
	st.Connections = int(u.Conns.Load())
	return st
}

// RecordRefusal adds a refusal made elsewhere (the HTTP API) to the log,
// the identity's counters and the rate-limited log lines.
func (h *Hub) RecordRefusal(r Refusal) {
	if h.acl == nil {
		return
	}
	if c, ok := policy.ClassNamed(r.Class); ok {
		h.acl.usageOf(r.Identity).Denied[c].Add(1)
	}
	h.acl.log.add(r)
	h.cfg.Events.Warn("request denied", "identity", r.Identity, "remote", r.Remote, "command", r.Command,
		"key", r.Key, "class", r.Class, "rule", r.Reason)
}

// CertifiedTransport is implemented by transports that can show the
// client certificate their handshake verified (netconn's, with
// --tls-client-ca).
type CertifiedTransport interface {
	PeerCertificate() *x509.Certificate
}

// identifyByCertificate gives a new session the identity its client
// certificate names, if any: it needs no auth line then. A godistlock
// session, which has no auth step, must have one: without it the
// connection is closed at once.
func (s *Session) identifyByCertificate(p Protocol, now timerwheel.Instant) {
	var id *policy.Identity
	if ct, ok := s.t.(CertifiedTransport); ok {
		if c := ct.PeerCertificate(); c != nil {
			id = s.hub.acl.pol.Load().ByCertificate(c)
		}
	}
	if id != nil && s.admit(id) {
		s.authed, s.byCert = true, true
		return
	}
	if p == Godistlock || id != nil { // no identity, or over its conns quota
		s.hub.cfg.Events.Warn("connection closed: no identity (godistlock needs a client certificate that names one)",
			"remote", s.remote())
		s.closing = true
		s.deadline = now.After(0)
		s.t.SetTimer(s.deadline)
	}
}

// authOnCertificate answers an auth line on a connection its certificate
// already identified: the two credentials must agree. A token of the same
// identity is ok; any other is a failed auth, with its close.
func (s *Session) authOnCertificate(out, token []byte, now timerwheel.Instant) []byte {
	if id := s.hub.acl.identify(token, s.hub.cfg.AuthToken); id != nil && id.Name == s.ident.Name {
		return parse.AppendStatus(out, vocab.StatusOK)
	}
	s.hub.gate.failed(s.authKey, now)
	return s.refuseAuth(out, now)
}

// IdentityConnections is the open connections of the identity named name.
func (h *Hub) IdentityConnections(name string) int {
	if h.acl == nil {
		return 0
	}
	h.acl.mu.Lock()
	u := h.acl.usage[name]
	h.acl.mu.Unlock()
	if u == nil {
		return 0
	}
	return int(u.Conns.Load())
}

// AttachIdentity counts the claims and keys of engine session id (an HTTP
// session, which has no auth line of its own) against the quotas of
// identity id, as a connection's are: a single node's engine only.
func (h *Hub) AttachIdentity(id engine.SessionID, ident *policy.Identity) {
	if h.acl == nil || ident.Everything() {
		return
	}
	if q := ident.Quota; q.Locks > 0 || q.Waiters > 0 || q.Keys > 0 {
		h.acl.usageOf(ident.Name) // its figures, for the metrics
		h.app.tenant(id, ident.Name, q)
	}
}
