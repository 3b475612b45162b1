package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// Locks and semaphores: every call, its answers, its validation.

func TestLockAcquireRenewRelease(t *testing.T) {
	ts := newServer(t, setup{eng: engine.Config{DefaultLease: 12 * time.Second}})
	a, b := ts.newSession(), ts.newSession()
	g := ts.call(a, "/v1/locks/job", map[string]int64{"acquire_timeout_s": 0, "lease_ttl_s": 7})
	if g.Status != "ok" || !validSessionID(g.Token) || g.LeaseTTLS != 7 {
		t.Fatalf("acquire: %+v, want ok, a 32-hex token, lease 7", g)
	}
	if g := ts.lock(b, "job", 0); g != (grant{Status: "timeout"}) {
		t.Fatalf("try-lock of a held lock: %+v, want exactly {timeout}", g)
	}
	// Any session may renew or release by token (spec §B.1.6); a renew
	// answers the new lease, the server's default when none is named.
	r := ts.send(req{method: "POST", path: "/v1/locks/job/renew", body: map[string]any{"token": g.Token, "lease_ttl_s": 9}, session: b})
	expect(t, "renew", r, 200, "")
	if strings.TrimSpace(string(r.body)) != `{"remaining_s":9}` {
		t.Fatalf("renew answered %s", r.body)
	}
	r = ts.send(req{method: "POST", path: "/v1/locks/job/renew", body: map[string]any{"token": g.Token}, session: a})
	if expect(t, "renew with the default lease", r, 200, ""); strings.TrimSpace(string(r.body)) != `{"remaining_s":12}` {
		t.Fatalf("renew without a lease answered %s, want the default 12", r.body)
	}
	wrong := "0000000000000009" + g.Token[16:]
	expect(t, "renew with a wrong token", ts.send(req{method: "POST", path: "/v1/locks/job/renew", body: map[string]any{"token": wrong}, session: a}), 404, codeNotHeld)
	expect(t, "release with a wrong token", ts.send(req{method: "POST", path: "/v1/locks/job/release", body: map[string]any{"token": wrong}, session: a}), 404, codeNotHeld)
	expect(t, "release of another key", ts.send(req{method: "POST", path: "/v1/locks/other/release", body: map[string]any{"token": g.Token}, session: a}), 404, codeNotHeld)
	ts.release(b, "job", g.Token)
	expect(t, "release twice", ts.send(req{method: "POST", path: "/v1/locks/job/release", body: map[string]any{"token": g.Token}, session: a}), 404, codeNotHeld)
	// The default lease; and a key with an encoded slash is one key.
	if g := ts.lock(b, "a%2Fb", 0); g.Status != "ok" || g.LeaseTTLS != 12 {
		t.Fatalf("acquire with the default lease: %+v, want lease 12", g)
	}
	if _, held := ts.lockStat("a/b"); !held {
		t.Fatal(`"a%2Fb" did not lock the key "a/b"`)
	}
}

// A blocking acquire is granted when the holder releases, in FIFO order.
func TestLockWaitersInFIFOOrder(t *testing.T) {
	ts := newServer(t, setup{})
	holder := ts.newSession()
	h := ts.lock(holder, "k", 0)
	var waiters []<-chan grant
	var ids []string
	for i := range 3 {
		sid := ts.newSession()
		ids = append(ids, sid)
		waiters = append(waiters, async(func() grant { return ts.lock(sid, "k", 60) }))
		eventually(t, "a waiter to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == i+1 })
	}
	releaser, tok := holder, h.Token
	for i, w := range waiters {
		ts.release(releaser, "k", tok)
		g := await(t, "a waiter's grant", w)
		if g.Status != "ok" || g.Token <= tok {
			t.Fatalf("waiter %d: %+v; want ok with a token after %s (token order is grant order)", i, g, tok)
		}
		for _, later := range waiters[i+1:] {
			select {
			case g := <-later:
				t.Fatalf("a later waiter was granted %+v before waiter %d", g, i)
			default:
			}
		}
		releaser, tok = ids[i], g.Token
	}
}

func TestTwoPhaseEnqueueWait(t *testing.T) {
	ts := newServer(t, setup{})
	holder, s := ts.newSession(), ts.newSession()
	h := ts.lock(holder, "k", 0)
	if g := ts.call(s, "/v1/locks/k/enqueue", nil); g != (grant{Status: "queued"}) {
		t.Fatalf("enqueue behind a holder: %+v, want exactly {queued}", g)
	}
	expect(t, "enqueue twice", ts.send(req{method: "POST", path: "/v1/locks/k/enqueue", body: "{}", session: s}), 409, codeAlreadyEnqueued)
	if g := ts.call(s, "/v1/locks/k/wait", map[string]int{"timeout_s": 0}); g.Status != "timeout" {
		t.Fatalf("wait 0 while queued: %+v, want timeout", g)
	}
	expect(t, "wait after the timeout consumed the enqueue", ts.send(req{method: "POST", path: "/v1/locks/k/wait", body: map[string]int{"timeout_s": 1}, session: s}), 409, codeNotEnqueued)
	// Enqueue again, wait, and the holder's release grants the wait.
	ts.call(s, "/v1/locks/k/enqueue", map[string]int{"lease_ttl_s": 5})
	got := async(func() grant { return ts.call(s, "/v1/locks/k/wait", map[string]int{"timeout_s": 60}) })
	eventually(t, "the wait to park", func() bool {
		sess := ts.api.sessions.lookup(s)
		defer ts.api.sessions.done(sess, ts.hub.Clock().Now())
		return sess.inFlight.Load() == 2 // this lookup and the wait
	})
	ts.release(holder, "k", h.Token)
	if g := await(t, "the wait", got); g.Status != "ok" || g.LeaseTTLS != 5 || g.Token <= h.Token {
		t.Fatalf("wait: %+v, want ok with lease 5 and a later token", g)
	}
	// The fast path: enqueue of a free key is acquired at once.
	a := ts.call(s, "/v1/locks/free/enqueue", "")
	if a.Status != "acquired" || !validSessionID(a.Token) || a.LeaseTTLS != 33 {
		t.Fatalf("enqueue of a free key: %+v, want acquired with the default lease 33", a)
	}
	if w := ts.call(s, "/v1/locks/free/wait", map[string]int{"timeout_s": 1}); w.Status != "ok" || w.Token != a.Token {
		t.Fatalf("wait after a fast-path enqueue: %+v, want ok with the token %s", w, a.Token)
	}
}

// A two-phase grant whose lease ran out before its wait: 409.
func TestWaitAfterLeaseExpired(t *testing.T) {
	ts := newServer(t, setup{fake: true})
	s := ts.newSession()
	if g := ts.call(s, "/v1/locks/k/enqueue", map[string]int{"lease_ttl_s": 1}); g.Status != "acquired" {
		t.Fatalf("enqueue: %+v", g)
	}
	ts.advance(1001 * time.Millisecond)
	expect(t, "wait after the lease ran out", ts.send(req{method: "POST", path: "/v1/locks/k/wait", body: map[string]int{"timeout_s": 1}, session: s}), 409, codeLeaseExpired)
}

func TestSemaphores(t *testing.T) {
	ts := newServer(t, setup{})
	a, b, c := ts.newSession(), ts.newSession(), ts.newSession()
	sem := func(sid string, body any) grant { return ts.call(sid, "/v1/semaphores/pool", body) }
	ga := sem(a, map[string]int{"acquire_timeout_s": 0, "limit": 2, "lease_ttl_s": 4})
	gb := sem(b, map[string]int{"limit": 2})
	if ga.Status != "ok" || ga.LeaseTTLS != 4 || gb.Status != "ok" || ga.Token == gb.Token {
		t.Fatalf("two holders of a limit-2 semaphore: %+v %+v", ga, gb)
	}
	if g := sem(c, map[string]int{"limit": 2}); g.Status != "timeout" {
		t.Fatalf("a third holder: %+v, want timeout", g)
	}
	expect(t, "another limit", ts.send(req{method: "POST", path: "/v1/semaphores/pool", body: map[string]int{"limit": 3}, session: c}), 409, codeLimitMismatch)
	expect(t, "enqueue with another limit", ts.send(req{method: "POST", path: "/v1/semaphores/pool/enqueue", body: map[string]int{"limit": 3}, session: c}), 409, codeLimitMismatch)
	// Locks and semaphores are two namespaces (v2): the lock "pool" is free.
	if g := ts.lock(c, "pool", 0); g.Status != "ok" {
		t.Fatalf("the lock of a semaphore's name: %+v, want ok (separate namespaces)", g)
	}
	expect(t, "release a semaphore slot as a lock", ts.send(req{method: "POST", path: "/v1/locks/pool/release", body: map[string]string{"token": ga.Token}, session: a}), 404, codeNotHeld)

	r := ts.send(req{method: "POST", path: "/v1/semaphores/pool/renew", body: map[string]any{"token": ga.Token, "lease_ttl_s": 8}, session: a})
	if expect(t, "sem renew", r, 200, ""); strings.TrimSpace(string(r.body)) != `{"remaining_s":8}` {
		t.Fatalf("sem renew answered %s", r.body)
	}
	if q := ts.call(c, "/v1/semaphores/pool/enqueue", map[string]int{"limit": 2}); q.Status != "queued" {
		t.Fatalf("sem enqueue when full: %+v", q)
	}
	got := async(func() grant { return ts.call(c, "/v1/semaphores/pool/wait", map[string]int{"timeout_s": 60}) })
	eventually(t, "the sem wait to park", func() bool {
		for _, s := range ts.hub.Engine().LockStats(ts.hub.Clock().Now(), 0).Semaphores {
			if s.Key == "pool" && s.Waiters == 1 {
				sess := ts.api.sessions.lookup(c)
				defer ts.api.sessions.done(sess, ts.hub.Clock().Now())
				return sess.inFlight.Load() == 2
			}
		}
		return false
	})
	r = ts.send(req{method: "POST", path: "/v1/semaphores/pool/release", body: map[string]string{"token": gb.Token}, session: b})
	expect(t, "sem release", r, 204, "")
	if g := await(t, "the sem wait", got); g.Status != "ok" {
		t.Fatalf("sem wait: %+v", g)
	}
	expect(t, "sem release twice", ts.send(req{method: "POST", path: "/v1/semaphores/pool/release", body: map[string]string{"token": gb.Token}, session: b}), 404, codeNotHeld)
	expect(t, "sem renew of a released slot", ts.send(req{method: "POST", path: "/v1/semaphores/pool/renew", body: map[string]string{"token": gb.Token}, session: b}), 404, codeNotHeld)
	if g := ts.call(a, "/v1/semaphores/free/enqueue", map[string]int{"limit": 1}); g.Status != "acquired" {
		t.Fatalf("sem enqueue of a free key: %+v", g)
	}
}

// Malformed keys, bodies, tokens and numbers: 400 bad_request, before
// anything reaches the engine.
func TestRequestValidation(t *testing.T) {
	ts := newServer(t, setup{})
	sid := ts.newSession()
	tok := strings.Repeat("ab", 16)
	cases := []struct {
		name, path string
		body       any
	}{
		{"a key with a blank", "/v1/locks/a%20b", `{}`},
		{"a key with a tab", "/v1/locks/a%09b", `{}`},
		{"a key over 256 bytes", "/v1/locks/" + strings.Repeat("k", 257), `{}`},
		{"no body", "/v1/locks/k", nil},
		{"an empty body", "/v1/locks/k", "  "},
		{"not JSON", "/v1/locks/k", "{nope"},
		{"not an object", "/v1/locks/k", `[1]`},
		{"null", "/v1/locks/k", `null`},
		{"two values", "/v1/locks/k", `{} {}`},
		{"trailing garbage", "/v1/locks/k", `{} x`},
		{"an unknown field", "/v1/locks/k", `{"acquire_timeout_s":1,"timeout":2}`},
		{"a string for a number", "/v1/locks/k", `{"acquire_timeout_s":"1"}`},
		{"a fraction", "/v1/locks/k", `{"acquire_timeout_s":1.5}`},
		{"a negative timeout", "/v1/locks/k", `{"acquire_timeout_s":-1}`},
		{"a negative lease", "/v1/locks/k", `{"lease_ttl_s":-1}`},
		{"seconds over a Duration", "/v1/locks/k", `{"acquire_timeout_s":9223372037}`},
		{"a body over 1 MiB", "/v1/locks/k", `{"acquire_timeout_s":1` + strings.Repeat(" ", 1<<20) + `}`},
		{"release without a token", "/v1/locks/k/release", `{}`},
		{"an uppercase token", "/v1/locks/k/release", `{"token":"` + strings.ToUpper(tok) + `"}`},
		{"a short token", "/v1/locks/k/release", `{"token":"abc"}`},
		{"a token with a blank", "/v1/locks/k/renew", `{"token":"` + tok[:31] + ` "}`},
		{"renew with a negative lease", "/v1/locks/k/renew", `{"token":"` + tok + `","lease_ttl_s":-5}`},
		{"enqueue with an unknown field", "/v1/locks/k/enqueue", `{"limit":2}`},
		{"wait without a body", "/v1/locks/k/wait", nil},
		{"wait with a negative timeout", "/v1/locks/k/wait", `{"timeout_s":-1}`},
		{"a semaphore without a limit", "/v1/semaphores/k", `{"acquire_timeout_s":1}`},
		{"a limit of 0", "/v1/semaphores/k", `{"limit":0}`},
		{"a limit over 1048576", "/v1/semaphores/k", `{"limit":1048577}`},
		{"sem enqueue without a limit", "/v1/semaphores/k/enqueue", `{}`},
		{"sem release with a bad token", "/v1/semaphores/k/release", `{"token":"zz"}`},
	}
	for _, c := range cases {
		expect(t, c.name, ts.send(req{method: "POST", path: c.path, body: c.body, session: sid}), 400, codeBadRequest)
	}
	// The largest valid numbers pass (a semaphore of limit 1048576, a
	// lease of 9223372036 s).
	if g := ts.call(sid, "/v1/semaphores/big", map[string]int64{"limit": 1 << 20, "lease_ttl_s": 9223372036}); g.Status != "ok" || g.LeaseTTLS != 9223372036 {
		t.Fatalf("the largest limit and lease: %+v", g)
	}
	if n := ts.hub.Engine().LockStats(ts.hub.Clock().Now(), 0); len(n.Locks)+len(n.IdleLocks) != 0 {
		t.Fatalf("a refused request reached the engine: %+v", n.Locks)
	}
}
