package httpapi

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// Sessions: creation and its bodies, ping, DELETE and its cleanup, the
// sweeper, serialisation of one session's calls.

func TestSessionLifecycle(t *testing.T) {
	ts := newServer(t, setup{})
	r := ts.send(req{method: "POST", path: "/v1/sessions"})
	expect(t, "create", r, 200, "")
	var s sessionReply
	r.decode(t, &s)
	if !validSessionID(s.SessionID) || s.IdleTimeoutS != 20 {
		t.Fatalf("created %+v, want 32 lowercase hex and idle_timeout_s 20 (the default)", s)
	}
	// The bodies a create takes: none, {}, a V2C stable_ref (inert here).
	for _, body := range []any{"{}", " ", map[string]string{"stable_ref": "job-7"}} {
		expect(t, "create with a body", ts.send(req{method: "POST", path: "/v1/sessions", body: body}), 200, "")
	}
	for _, body := range []string{`{"bogus":1}`, `not json`, `[]`, `{}{}`, `{"stable_ref":""}`,
		`{"stable_ref":"` + strings.Repeat("x", 65) + `"}`, `{"stable_ref":"tab\there"}`} {
		expect(t, "create with "+body, ts.send(req{method: "POST", path: "/v1/sessions", body: body}), 400, codeBadRequest)
	}
	if n := ts.hub.Connections(); n != 4 || ts.api.Sessions() != 4 {
		t.Fatalf("%d engine connections, %d sessions; want 4 and 4 (a session is an engine session)", n, ts.api.Sessions())
	}

	expect(t, "ping", ts.send(req{method: "POST", path: "/v1/sessions/" + s.SessionID + "/ping"}), 204, "")
	expect(t, "ping a malformed id", ts.send(req{method: "POST", path: "/v1/sessions/XYZ/ping"}), 400, codeBadRequest)
	unknown := strings.Repeat("0", 32)
	gone := ts.send(req{method: "POST", path: "/v1/sessions/" + unknown + "/ping"})
	expect(t, "ping an unknown id", gone, 410, codeSessionGone)
	// dflockd's body exactly: the cluster's detail is a member's alone.
	if got := string(bytes.TrimSpace(gone.body)); got != `{"error":"session_gone"}` {
		t.Fatalf("410 of a single node: %s", got)
	}

	expect(t, "delete", ts.send(req{method: "DELETE", path: "/v1/sessions/" + s.SessionID}), 204, "")
	expect(t, "delete again", ts.send(req{method: "DELETE", path: "/v1/sessions/" + s.SessionID}), 410, codeSessionGone)
	expect(t, "delete a malformed id", ts.send(req{method: "DELETE", path: "/v1/sessions/" + strings.ToUpper(unknown[:31]) + "A"}), 400, codeBadRequest)
	expect(t, "ping after delete", ts.send(req{method: "POST", path: "/v1/sessions/" + s.SessionID + "/ping"}), 410, codeSessionGone)
	if ts.hub.Connections() != 3 {
		t.Fatalf("%d engine connections after a delete, want 3", ts.hub.Connections())
	}
}

// Every lock call of a deleted session answers 410, and a call without
// the session header 400.
func TestCallsOfAGoneSession(t *testing.T) {
	ts := newServer(t, setup{})
	sid := ts.newSession()
	expect(t, "delete", ts.send(req{method: "DELETE", path: "/v1/sessions/" + sid}), 204, "")
	tok := strings.Repeat("a", 32)
	calls := []struct {
		path string
		body any
	}{
		{"/v1/locks/k", map[string]int{"acquire_timeout_s": 1}},
		{"/v1/locks/k/release", map[string]string{"token": tok}},
		{"/v1/locks/k/renew", map[string]string{"token": tok}},
		{"/v1/locks/k/enqueue", nil},
		{"/v1/locks/k/wait", map[string]int{"timeout_s": 1}},
		{"/v1/semaphores/k", map[string]int{"acquire_timeout_s": 1, "limit": 2}},
		{"/v1/semaphores/k/release", map[string]string{"token": tok}},
		{"/v1/semaphores/k/renew", map[string]string{"token": tok}},
		{"/v1/semaphores/k/enqueue", map[string]int{"limit": 2}},
		{"/v1/semaphores/k/wait", map[string]int{"timeout_s": 1}},
	}
	for _, c := range calls {
		expect(t, c.path+" of a deleted session", ts.send(req{method: "POST", path: c.path, body: c.body, session: sid}), 410, codeSessionGone)
		expect(t, c.path+" of an unknown session", ts.send(req{method: "POST", path: c.path, body: c.body, session: "nonsense"}), 410, codeSessionGone)
		expect(t, c.path+" without a session", ts.send(req{method: "POST", path: c.path, body: c.body}), 400, codeBadRequest)
	}
}

// DELETE is a disconnect (spec §D.4): the session's locks go to the next
// in line at once, and its own waiting call ends with 410.
func TestDeleteReleasesAndEndsWaits(t *testing.T) {
	ts := newServer(t, setup{})
	holder, waiter := ts.newSession(), ts.newSession()
	if g := ts.lock(holder, "k", 0); g.Status != "ok" {
		t.Fatalf("holder: %+v", g)
	}
	got := async(func() grant { return ts.lock(waiter, "k", 60) })
	eventually(t, "the waiter to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	expect(t, "delete the holder", ts.send(req{method: "DELETE", path: "/v1/sessions/" + holder}), 204, "")
	if g := await(t, "the waiter's grant", got); g.Status != "ok" || len(g.Token) != 32 {
		t.Fatalf("waiter after the holder's delete: %+v, want ok with a token", g)
	}

	// Now the waiter holds k; a third session waits, and is deleted while
	// it waits: its call answers 410 and its wait is gone.
	third := ts.newSession()
	ended := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/k", body: map[string]int{"acquire_timeout_s": 60}, session: third})
	})
	eventually(t, "the third to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	// and a second call of it waits for its turn.
	queued := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/free", body: "{}", session: third})
	})
	sess := ts.api.sessions.lookup(third)
	ts.api.sessions.done(sess, ts.hub.Clock().Now())
	eventually(t, "the second call to reach the server", func() bool { return sess.inFlight.Load() == 2 })
	expect(t, "delete the waiting session", ts.send(req{method: "DELETE", path: "/v1/sessions/" + third}), 204, "")
	expect(t, "the call of the deleted session", await(t, "the deleted session's call", ended), 410, codeSessionGone)
	expect(t, "the call waiting for its turn", await(t, "the call waiting for its turn", queued), 410, codeSessionGone)
	if _, held := ts.lockStat("free"); held {
		t.Fatal("a call of a deleted session ran")
	}
	if st, _ := ts.lockStat("k"); st.Waiters != 0 {
		t.Fatalf("%d waiters after the waiting session was deleted, want 0", st.Waiters)
	}
}

// The sweeper closes a session idle for twice the idle timeout, which
// releases its lock; never one with a call in flight, however long.
func TestSweeperReapsIdleSessions(t *testing.T) {
	ts := newServer(t, setup{fake: true, cfg: Config{SessionIdleTimeout: time.Second}})
	holder, waiter := ts.newSession(), ts.newSession()
	if g := ts.lock(holder, "k", 0); g.Status != "ok" {
		t.Fatalf("holder: %+v", g)
	}
	// The waiter's call lasts longer than any idle limit.
	got := async(func() grant { return ts.lock(waiter, "k", 3600) })
	eventually(t, "the waiter to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })

	ts.advance(1999 * time.Millisecond)
	if ts.api.Sessions() != 2 {
		t.Fatalf("%d sessions after 1.999 s idle, want 2 (reaped at 2 × 1 s)", ts.api.Sessions())
	}
	ts.advance(time.Millisecond)
	// The holder is reaped, its lock goes to the waiter, whose session
	// lives on: its call was in flight.
	if g := await(t, "the waiter's grant", got); g.Status != "ok" {
		t.Fatalf("waiter: %+v, want ok once the idle holder was reaped", g)
	}
	if n := ts.api.Sessions(); n != 1 {
		t.Fatalf("%d sessions, want 1: the idle holder reaped, the waiter (in flight) kept", n)
	}
	expect(t, "ping the reaped session", ts.send(req{method: "POST", path: "/v1/sessions/" + holder + "/ping"}), 410, codeSessionGone)
	expect(t, "a call of the reaped session", ts.send(req{method: "POST", path: "/v1/locks/k", body: "{}", session: holder}), 410, codeSessionGone)

	// Idleness counts from the end of the last call: ping at +1.5 s
	// postpones the end to +3.5 s.
	ts.advance(1500 * time.Millisecond)
	expect(t, "ping", ts.send(req{method: "POST", path: "/v1/sessions/" + waiter + "/ping"}), 204, "")
	ts.advance(1999 * time.Millisecond)
	if ts.api.Sessions() != 1 {
		t.Fatal("a session reaped less than 2 s after its ping")
	}
	ts.advance(time.Millisecond)
	if ts.api.Sessions() != 0 {
		t.Fatal("a session idle for 2 s after its ping was not reaped")
	}
	if _, held := ts.lockStat("k"); held {
		t.Fatal("the reaped waiter's lock is still held")
	}
	if ts.hub.Connections() != 0 {
		t.Fatalf("%d engine sessions after every HTTP session was reaped", ts.hub.Connections())
	}
}

// The calls of one session run one at a time, in order, as the requests
// of one TCP connection do.
func TestSessionCallsAreSerialised(t *testing.T) {
	ts := newServer(t, setup{})
	holder, s := ts.newSession(), ts.newSession()
	h := ts.lock(holder, "k", 0)
	first := async(func() grant { return ts.lock(s, "k", 60) })
	eventually(t, "the first call to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	second := async(func() grant { return ts.lock(s, "other", 0) })
	sess := ts.api.sessions.lookup(s)
	ts.api.sessions.done(sess, ts.hub.Clock().Now())
	// inFlight: this lookup's was given back; the two calls' remain.
	eventually(t, "the second call to reach the server", func() bool { return sess.inFlight.Load() == 2 })
	// A negative can only be watched for a while: unserialised, the
	// second call (a try-lock of a free key) takes a millisecond.
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if _, held := ts.lockStat("other"); held {
			t.Fatal("the second call ran while the first of its session waited")
		}
	}
	select {
	case g := <-second:
		t.Fatalf("the second call answered %+v while the first of its session waited", g)
	default:
	}
	ts.release(holder, "k", h.Token)
	if g := await(t, "the first call", first); g.Status != "ok" {
		t.Fatalf("first call: %+v", g)
	}
	if g := await(t, "the second call", second); g.Status != "ok" {
		t.Fatalf("second call: %+v", g)
	}
}

// Shutdown closes every session: a waiting call answers 410, holds are
// released, and new sessions are refused.
func TestShutdownClosesSessions(t *testing.T) {
	ts := newServer(t, setup{})
	holder, waiter := ts.newSession(), ts.newSession()
	ts.lock(holder, "k", 0)
	ended := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/k", body: map[string]int{"acquire_timeout_s": 60}, session: waiter})
	})
	eventually(t, "the waiter to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	if err := ts.api.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	expect(t, "the waiting call at shutdown", await(t, "the waiting call", ended), 410, codeSessionGone)
	if _, held := ts.lockStat("k"); held {
		t.Fatal("a lock of a session closed by Shutdown is still held")
	}
	if ts.hub.Connections() != 0 || ts.api.Sessions() != 0 {
		t.Fatalf("%d engine sessions, %d HTTP sessions after Shutdown", ts.hub.Connections(), ts.api.Sessions())
	}
	if s, refused := ts.api.open(netip.MustParseAddr("127.0.0.1"), ""); s != nil || refused != codeDraining {
		t.Fatalf("open after Shutdown: %v %q, want refused as draining", s, refused)
	}
}
