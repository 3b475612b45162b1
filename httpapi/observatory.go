package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The lock observatory's JSON (GET /v1/keys, /v1/keys/{key},
// /v1/deadlocks, the event stream of eventstream.go) and an operator's
// force release. Every route reads the hub's engine: a single node's, or
// on a cluster member its replica of the replicated state, so every
// member serves the same locks and queues; the identity of a client
// (transport, address) is known on the member that serves it.
//
// Numbers that can pass 2^53 (session ids, connection numbers, fences)
// are decimal strings: a browser's JSON numbers would round them.

// Bounds of the observatory's answers.
const (
	// defaultKeyPage is a page of GET /v1/keys when limit is not given.
	defaultKeyPage = 100
	// keyEvents is how many recent events GET /v1/keys/{key} lists.
	keyEvents = 50
	// maxReason bounds the reason an operator gives a force release: it
	// goes into the event ring and the log.
	maxReason = 128
)

// observatoryRoutes are the observatory's routes, for routeTable.
func (a *API) observatoryRoutes() []route {
	return []route{
		{"GET /v1/keys", a.listKeys},
		{"GET /v1/keys/{key}", a.showKey},
		{"GET /v1/events", a.streamEvents},
		{"GET /v1/deadlocks", a.listDeadlocks},
		{"GET /v1/hotkeys", a.listHotKeys},
		{"POST /v1/admin/locks/{key}/release", a.forceRelease},
		{"GET " + uiPath, serveUI},
	}
}

type (
	keysReply struct {
		Keys       []keyJSON `json:"keys"`
		NextCursor string    `json:"next_cursor,omitempty"`
		// Events: the server records lock events (--observatory-events);
		// without them the times of claims are unknown.
		Events bool `json:"events"`
	}
	keyReply struct {
		Key     string      `json:"key"`
		Entries []keyJSON   `json:"entries"`
		Events  []eventJSON `json:"events"`
	}
	keyJSON struct {
		Key          string       `json:"key"`
		Kind         string       `json:"kind"`
		Limit        int          `json:"limit,omitempty"`
		Holders      []holderJSON `json:"holders"`
		Waiters      []waiterJSON `json:"waiters"`
		HoldersTotal int          `json:"holders_total"`
		WaitersTotal int          `json:"waiters_total"`
		Observers    int          `json:"observers,omitempty"`
		IdleMs       int64        `json:"idle_ms"`
		Value        *int64       `json:"value,omitempty"`     // counter
		ValueLen     *int         `json:"value_len,omitempty"` // kv
		TTLMs        *int64       `json:"ttl_ms,omitempty"`    // kv with a TTL
		Len          *int         `json:"len,omitempty"`       // list
		Count        *int         `json:"count,omitempty"`     // barrier
	}
	clientJSON struct {
		SessionID   string `json:"session_id"`
		ConnID      string `json:"conn_id"`
		Open        bool   `json:"open"`
		Transport   string `json:"transport,omitempty"`
		RemoteAddr  string `json:"remote_addr,omitempty"`
		Identity    string `json:"identity,omitempty"` // with a policy: who it authenticated as
		ConnectedMs *int64 `json:"connected_ms,omitempty"`
	}
	holderJSON struct {
		Client           clientJSON `json:"client"`
		Fence            string     `json:"fence"`
		Writer           bool       `json:"writer,omitempty"`
		Elect            bool       `json:"elect,omitempty"`
		Pending          bool       `json:"pending,omitempty"`
		LeaseMs          int64      `json:"lease_ms"`
		LeaseRemainingMs int64      `json:"lease_remaining_ms"`
		HeldMs           *int64     `json:"held_ms,omitempty"`
		WaitedMs         *int64     `json:"waited_ms,omitempty"`
		Renewals         *int64     `json:"renewals,omitempty"`
	}
	waiterJSON struct {
		Client             clientJSON `json:"client"`
		Writer             bool       `json:"writer,omitempty"`
		Blocked            bool       `json:"blocked"`
		WaitedMs           *int64     `json:"waited_ms,omitempty"`
		TimeoutRemainingMs *int64     `json:"timeout_remaining_ms,omitempty"`
	}
	eventJSON struct {
		ID     string     `json:"id,omitempty"` // the stream's id, in /v1/events
		At     time.Time  `json:"at"`
		Kind   string     `json:"kind"`
		Type   string     `json:"type"`
		Key    string     `json:"key"`
		Writer bool       `json:"writer,omitempty"`
		Client clientJSON `json:"client"`
		Fence  string     `json:"fence,omitempty"`
		Note   string     `json:"note,omitempty"`
	}
	forceReleaseReply struct {
		Key      string `json:"key"`
		Released int64  `json:"released"`
	}
)

// view turns engine state into the API's JSON, with the identities the
// hub knows, as of one instant of the engine's time and the wall clock.
type view struct {
	hub  *session.Hub
	eng  *engine.Engine
	now  timerwheel.Instant // the engine state's time
	wall time.Time          // the wall clock at now
}

func (a *API) view() view {
	return view{hub: a.hub, eng: a.hub.Engine(), now: a.hub.StateNow(), wall: time.Now()}
}

// wallOf converts a time of the engine state to the wall clock.
func (v *view) wallOf(t timerwheel.Tick) time.Time {
	return v.wall.Add(-time.Duration(v.now.Tick()-t) * time.Millisecond).UTC()
}

func (v *view) client(c engine.Claimant) clientJSON {
	return v.clientOf(c.Session, c.ConnID, c.Open)
}

func (v *view) clientOf(id engine.SessionID, conn uint64, open bool) clientJSON {
	cj := clientJSON{SessionID: strconv.FormatUint(uint64(id), 10), ConnID: strconv.FormatUint(conn, 10), Open: open}
	if !open {
		return cj
	}
	if ident, ok := v.hub.Identify(id, conn); ok {
		cj.Transport, cj.RemoteAddr, cj.Identity = ident.Transport, ident.RemoteAddr, ident.Name
	}
	if at, open, ok := v.eng.SessionOpened(id); open && ok {
		cj.ConnectedMs = known(int64(v.now.Tick() - at))
	}
	return cj
}

// known is a duration the engine knows (≥ 0), else nil: -1 is unknown.
func known(ms int64) *int64 {
	if ms < 0 {
		return nil
	}
	return &ms
}

func (v *view) key(ks *engine.KeyState) keyJSON {
	kj := keyJSON{
		Key: ks.Key, Kind: ks.Kind.String(), Limit: ks.Limit, HoldersTotal: ks.HoldersTotal, WaitersTotal: ks.WaitersTotal,
		Observers: ks.Observers, IdleMs: ks.IdleMs, Holders: []holderJSON{}, Waiters: []waiterJSON{},
	}
	switch ks.Kind {
	case engine.KeyCounter:
		kj.Value = &ks.Value
	case engine.KeyKV:
		kj.ValueLen, kj.TTLMs = &ks.ValueLen, known(ks.TTLMs)
	case engine.KeyList:
		kj.Len = &ks.Len
	case engine.KeyBarrier:
		kj.Count = &ks.Count
	}
	for _, h := range ks.Holders {
		kj.Holders = append(kj.Holders, holderJSON{
			Client: v.client(h.Claimant), Fence: strconv.FormatUint(h.Fence, 10), Writer: h.Writer, Elect: h.Elect,
			Pending: h.Pending, LeaseMs: h.LeaseMs, LeaseRemainingMs: h.LeaseRemainingMs,
			HeldMs: known(h.HeldMs), WaitedMs: known(h.WaitedMs), Renewals: known(h.Renewals),
		})
	}
	for _, w := range ks.Waiters {
		kj.Waiters = append(kj.Waiters, waiterJSON{
			Client: v.client(w.Claimant), Writer: w.Writer, Blocked: w.Blocked,
			WaitedMs: known(w.WaitedMs), TimeoutRemainingMs: known(w.TimeoutRemainingMs),
		})
	}
	return kj
}

func (v *view) event(ev *engine.Event) eventJSON {
	open := false
	if v.eng != nil {
		_, open, _ = v.eng.SessionOpened(ev.Session)
	}
	ej := eventJSON{
		At: v.wallOf(ev.At), Kind: ev.Kind.String(), Type: ev.Type.String(), Key: ev.Key, Writer: ev.Writer,
		Client: v.clientOf(ev.Session, ev.ConnID, open), Note: ev.Note,
	}
	if ev.Fence != 0 {
		ej.Fence = strconv.FormatUint(ev.Fence, 10)
	}
	return ej
}

// listKeys is GET /v1/keys: a page of keys in (key, kind) order,
// selected by prefix and kinds (comma-separated), from the cursor on.
func (a *API) listKeys(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var kq engine.KeyQuery
	kq.Prefix = q.Get("prefix")
	msg := ""
	if k := q.Get("kind"); k != "" {
		for _, name := range strings.Split(k, ",") {
			kind, ok := engine.KeyKindNamed(name)
			if !ok {
				msg = "kind must be lock, semaphore, rwlock, counter, kv, list or barrier (comma-separated)"
				break
			}
			kq.Kinds = kq.Kinds.With(kind)
		}
	}
	kq.Limit = defaultKeyPage
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > engine.MaxKeyPage {
			msg = firstOf(msg, "limit must be 1.."+strconv.Itoa(engine.MaxKeyPage))
		}
		kq.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		ref, ok := parseCursor(c)
		if !ok {
			msg = firstOf(msg, "cursor is not one this server gave")
		}
		kq.After = ref
	}
	if len(kq.Prefix) > maxField {
		msg = firstOf(msg, "prefix is over "+strconv.Itoa(maxField)+" bytes")
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	v := a.view()
	reply := keysReply{Keys: []keyJSON{}}
	if v.eng == nil { // a cluster member before its first entry: no keys yet
		writeJSON(w, http.StatusOK, reply)
		return
	}
	sc := observeScope(r)
	want := kq.Limit
	// A scoped caller's page skips the keys it may not observe: pages are
	// read on until it is full, the keys run out, or a bound of pages
	// (then it comes back short, with the cursor to go on from). The
	// cursor is the last key looked at, shown or not.
	var last engine.KeyRef
	more := false
	for range maxScopedPages {
		page, pnext := v.eng.InspectKeys(v.now, kq)
		stopped := false
		for i := range page {
			if len(reply.Keys) == want {
				stopped = true
				break
			}
			last = engine.KeyRef{Key: page[i].Key, Kind: page[i].Kind}
			if sc.sees(page[i].Key) {
				reply.Keys = append(reply.Keys, v.key(&page[i]))
			}
		}
		more = stopped || pnext != (engine.KeyRef{})
		if !more || len(reply.Keys) == want {
			break
		}
		kq.After = pnext
	}
	if more {
		reply.NextCursor = formatCursor(last)
	}
	reply.Events = v.eng.EventsOn()
	writeJSON(w, http.StatusOK, reply)
}

// The cursor is the last entry of a page, opaque to clients: its kind
// and key, base64url so that any key bytes survive a query string.
func formatCursor(ref engine.KeyRef) string {
	return base64.RawURLEncoding.EncodeToString([]byte(ref.Kind.String() + ":" + ref.Key))
}

func parseCursor(s string) (engine.KeyRef, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return engine.KeyRef{}, false
	}
	name, key, ok := strings.Cut(string(b), ":")
	kind, known := engine.KeyKindNamed(name)
	return engine.KeyRef{Key: key, Kind: kind}, ok && known
}

// showKey is GET /v1/keys/{key}: every entry of that name, and its recent
// events; 404 when the key has neither.
func (a *API) showKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if msg := checkKey(key); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	v := a.view()
	reply := keyReply{Key: key, Entries: []keyJSON{}, Events: []eventJSON{}}
	if v.eng != nil {
		states := v.eng.InspectKey(v.now, key)
		for i := range states {
			reply.Entries = append(reply.Entries, v.key(&states[i]))
		}
		evs := v.eng.KeyEvents(key, keyEvents, nil)
		for i := range evs {
			reply.Events = append(reply.Events, v.event(&evs[i]))
		}
	}
	if len(reply.Entries) == 0 && len(reply.Events) == 0 {
		writeError(w, http.StatusNotFound, codeNotFound, "no such key")
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

// forceRelease is POST /v1/admin/locks/{key}/release: an operator
// releases the key's holder (the one with ?fence=, or every holder) in
// the lock space (?kind=lock, the default, read-write locks included) or
// the semaphores' (?kind=semaphore). The FIFO moves on; the holder's
// next renew or release answers error (HTTP: 404 not_held). The release
// is logged with who asked (the client address and ?reason=) and shows on
// the key's timeline as force_release.
func (a *API) forceRelease(w http.ResponseWriter, r *http.Request) {
	if !a.adminAuthorized(w, r) {
		return
	}
	key, q := r.PathValue("key"), r.URL.Query()
	c := engine.Command{Kind: engine.KindForceRelease}
	c.Req.Op = vocab.OpRelease
	msg := checkKey(key)
	switch q.Get("kind") {
	case "", "lock":
	case "semaphore":
		c.Req.Op = vocab.OpSemRelease
	default:
		msg = firstOf(msg, "kind must be lock or semaphore")
	}
	if f := q.Get("fence"); f != "" {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil || n == 0 {
			msg = firstOf(msg, "fence must be a positive integer")
		}
		c.Fence = n
	}
	reason := q.Get("reason")
	if len(reason) > maxReason {
		msg = firstOf(msg, "reason is over "+strconv.Itoa(maxReason)+" bytes")
	}
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	who := "admin@" + r.RemoteAddr
	if reason != "" {
		who += ": " + reason
	}
	c.Req.Key, c.Req.Value = []byte(key), []byte(who)
	res, ok := a.oneShotCall(r, &c)
	if !ok {
		return // the caller went away; the release goes on
	}
	if res.Status == vocab.StatusErrorNotLeader {
		a.writeNotLeader(w) // a cluster's follower: the leader's log takes it
		return
	}
	if l := a.cfg.Log; l != nil {
		l.Info("admin: force release", "kind", firstOf(q.Get("kind"), "lock"), "key", key,
			"released", releasedFences(c.Fence, res.Items), "by", who)
	} else {
		a.cfg.Logf("httpapi: admin: force release of %s %q: %s, by %s", firstOf(q.Get("kind"), "lock"), key, releasedFences(c.Fence, res.Items), who)
	}
	writeJSON(w, http.StatusOK, forceReleaseReply{Key: key, Released: res.Int})
}

// releasedFences says which holders a force release released, by fence:
// those it released (asked is the fence asked for, 0 for every holder).
func releasedFences(asked uint64, fences []string) string {
	switch {
	case len(fences) == 1:
		return "released the holder with fence " + fences[0]
	case len(fences) > 1:
		return "released " + strconv.Itoa(len(fences)) + " holders, fences " + strings.Join(fences, ", ")
	case asked != 0:
		return "no holder with fence " + strconv.FormatUint(asked, 10) + ", nothing released"
	}
	return "no holder, nothing released"
}

// oneShotCall runs one command in an engine session of its own (an
// operator's force release, a POST of a signal), the same on a single node (answered at once) and on a cluster member
// (answered when the log applies it, to this endpoint; a follower's
// not_leader at once). ok is false if the HTTP client went away first.
func (a *API) oneShotCall(r *http.Request, c *engine.Command) (res engine.Result, ok bool) {
	e := oneShotEndpoint{newReplies()}
	c.Session = a.hub.OpenEndpoint(e)
	defer a.hub.CloseEndpoint(c.Session)
	e.replies.expect()
	res, done := a.hub.Call(c)
	if done {
		e.replies.unexpect()
		return res, true
	}
	res, end := e.replies.next(r.Context(), nil)
	return res, end == answered
}

// oneShotEndpoint is the endpoint of a oneShotCall: its answer.
type oneShotEndpoint struct{ replies *replies }

func (e oneShotEndpoint) Post(r engine.Result) { e.replies.post(r) }

// adminAuthorized checks the admin token of an admin call: 503
// admin_disabled without one configured, 401 (after the bearer token's
// delay) for a wrong or missing one. The membership routes (cluster.go's
// admin) and the force release then want a cluster's leader.
func (a *API) adminAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if a.cfg.AdminToken == "" {
		writeError(w, http.StatusServiceUnavailable, codeAdminDisabled, "the admin routes need --admin-token (DFLOCKD_ADMIN_TOKEN)")
		return false
	}
	if !sameToken(r.Header.Get(adminHeader), &a.adminSum) {
		a.refuse(w, r, "")
		return false
	}
	return true
}

// RemoteAddr is the client address of an HTTP session, for the
// observatory (session.AddressedEndpoint).
func (s *httpSession) RemoteAddr() string { return s.ip.String() }

// IdentityName is the policy identity that opened the session ("" without
// a policy), for the observatory.
func (s *httpSession) IdentityName() string { return s.owner }

var _ session.AddressedEndpoint = (*httpSession)(nil)
