package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The rest of spec §F.2's error map: the engine's caps, fence
// persistence, conflicts with a TCP client's read-write lock, drain,
// unknown routes and methods; and the probes and stats.

func TestEngineCaps(t *testing.T) {
	ts := newServer(t, setup{eng: engine.Config{MaxLocks: 2, MaxWaiters: 1}})
	a, b, c := ts.newSession(), ts.newSession(), ts.newSession()
	ts.lock(a, "one", 0)
	ts.call(a, "/v1/semaphores/two", map[string]int{"limit": 3})
	expect(t, "a third key", ts.send(req{method: "POST", path: "/v1/locks/three", body: "{}", session: a}), 503, codeMaxLocks)
	expect(t, "a third key by enqueue", ts.send(req{method: "POST", path: "/v1/locks/three/enqueue", session: a}), 503, codeMaxLocks)
	if g := ts.call(b, "/v1/locks/one/enqueue", nil); g.Status != "queued" {
		t.Fatalf("the one waiter allowed: %+v", g)
	}
	// --max-waiters counts a try-lock too (spec §B.1.3).
	expect(t, "a second waiter", ts.send(req{method: "POST", path: "/v1/locks/one", body: map[string]int{"acquire_timeout_s": 5}, session: c}), 503, codeMaxWaiters)
	expect(t, "a second waiter, try-lock", ts.send(req{method: "POST", path: "/v1/locks/one", body: "{}", session: c}), 503, codeMaxWaiters)
}

// failingCeiling is a fence state file that cannot be written.
type failingCeiling struct{}

func (failingCeiling) Reserve(uint64) error { return errors.New("disk full") }

func TestFencePersistenceFailure(t *testing.T) {
	ts := newServer(t, setup{eng: engine.Config{Ceiling: failingCeiling{}}})
	sid := ts.newSession()
	expect(t, "acquire without fences", ts.send(req{method: "POST", path: "/v1/locks/k", body: "{}", session: sid}), 503, codeFencePersistence)
	expect(t, "enqueue without fences", ts.send(req{method: "POST", path: "/v1/locks/k/enqueue", session: sid}), 503, codeFencePersistence)
	expect(t, "sem acquire without fences", ts.send(req{method: "POST", path: "/v1/semaphores/k", body: `{"limit":1}`, session: sid}), 503, codeFencePersistence)
}

// endpointSink is an engine session of the test's own, a stand-in for a
// TCP client that uses the redis-feats primitives.
type endpointSink struct{ got chan engine.Result }

func (e endpointSink) Post(r engine.Result) { e.got <- r }

func TestLockOfAReadWriteLockKey(t *testing.T) {
	ts := newServer(t, setup{})
	other := ts.hub.OpenEndpoint(endpointSink{make(chan engine.Result, 1)})
	r, _ := ts.hub.Call(&engine.Command{Kind: engine.KindRequest, Session: other,
		Req: vocab.Request{Op: vocab.OpReadLock, Key: []byte("rw"), Timeout: 0}})
	if r.Status != vocab.StatusOK {
		t.Fatalf("read lock: %+v", r)
	}
	sid := ts.newSession()
	expect(t, "lock a read-write lock's key", ts.send(req{method: "POST", path: "/v1/locks/rw", body: "{}", session: sid}), 409, codeTypeMismatch)
	ts.hub.CloseEndpoint(other)
}

// A drain (SIGTERM, spec §D.5): waiting calls end with 503 draining, new
// calls and sessions are refused, /ready says so; DELETE still works.
func TestDrain(t *testing.T) {
	ts := newServer(t, setup{})
	holder, waiter, sem := ts.newSession(), ts.newSession(), ts.newSession()
	h := ts.lock(holder, "k", 0)
	ts.call(sem, "/v1/semaphores/s", map[string]int{"limit": 1})
	ended := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/k", body: map[string]int{"acquire_timeout_s": 60}, session: waiter})
	})
	semEnded := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/semaphores/s", body: map[string]int{"acquire_timeout_s": 60, "limit": 1}, session: holder})
	})
	eventually(t, "the waiters to queue", func() bool {
		st := ts.hub.Engine().LockStats(ts.hub.Clock().Now(), 0)
		return len(st.Locks) == 1 && st.Locks[0].Waiters == 1 && len(st.Semaphores) == 1 && st.Semaphores[0].Waiters == 1
	})
	// A second call of the waiting session waits for its turn.
	queued := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/free", body: "{}", session: waiter})
	})
	eventually(t, "the second call to wait for its turn", func() bool {
		sess := ts.api.sessions.lookup(waiter)
		defer ts.api.sessions.done(sess, ts.hub.Clock().Now())
		return sess.inFlight.Load() == 3 // this lookup and the two calls
	})
	expect(t, "ready before the drain", ts.send(req{method: "GET", path: "/ready"}), 200, "")
	ts.hub.Drain()
	expect(t, "a waiting acquire at the drain", await(t, "the waiting acquire", ended), 503, codeDraining)
	expect(t, "a call that waited for its turn", await(t, "the call that waited for its turn", queued), 503, codeDraining)
	expect(t, "a waiting sem acquire at the drain", await(t, "the waiting sem acquire", semEnded), 503, codeDraining)
	r := ts.send(req{method: "GET", path: "/ready"})
	if expect(t, "ready while draining", r, 503, ""); strings.TrimSpace(string(r.body)) != `{"status":"draining"}` {
		t.Fatalf("/ready while draining: %s", r.body)
	}
	expect(t, "health while draining", ts.send(req{method: "GET", path: "/health"}), 200, "")
	expect(t, "a new call while draining", ts.send(req{method: "POST", path: "/v1/locks/x", body: "{}", session: waiter}), 503, codeDraining)
	expect(t, "a release while draining", ts.send(req{method: "POST", path: "/v1/locks/k/release", body: map[string]string{"token": h.Token}, session: holder}), 503, codeDraining)
	expect(t, "a new session while draining", ts.send(req{method: "POST", path: "/v1/sessions"}), 503, codeDraining)
	expect(t, "delete while draining", ts.send(req{method: "DELETE", path: "/v1/sessions/" + holder}), 204, "")
	if _, held := ts.lockStat("k"); held {
		t.Fatal("a deleted session's lock is held while draining")
	}
}

func TestRoutingErrors(t *testing.T) {
	ts := newServer(t, setup{})
	for _, path := range []string{"/", "/nowhere", "/v1", "/v1/locks", "/v1/locks/k/steal", "/v1/sessions/x/y/z"} {
		expect(t, "GET "+path, ts.send(req{method: "GET", path: path}), 404, codeNotFound)
	}
	cases := []struct{ method, path, allow string }{
		{"GET", "/v1/locks/k", "POST"},
		{"DELETE", "/v1/semaphores/k/wait", "POST"},
		{"PUT", "/v1/sessions", "POST"},
		{"GET", "/v1/sessions/" + strings.Repeat("a", 32), "DELETE"},
		{"POST", "/v1/stats", "GET, HEAD"},
		{"POST", "/health", "GET, HEAD"},
		{"WIBBLE", "/metrics", "GET, HEAD"},
		{"OPTIONS", "/v1/locks/k", "POST"}, // without CORS, OPTIONS is no method here
	}
	for _, c := range cases {
		r := ts.send(req{method: c.method, path: c.path})
		expect(t, c.method+" "+c.path, r, 405, codeMethodNotAllowed)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	// HEAD of a GET route answers its headers.
	if r := ts.send(req{method: "HEAD", path: "/health"}); r.status != 200 || len(r.body) != 0 {
		t.Fatalf("HEAD /health: %d %q", r.status, r.body)
	}
}

func TestProbesAndStats(t *testing.T) {
	ts := newServer(t, setup{})
	for _, p := range []string{"/health", "/ready"} {
		r := ts.send(req{method: "GET", path: p})
		if expect(t, p, r, 200, ""); strings.TrimSpace(string(r.body)) != `{"status":"ok"}` {
			t.Fatalf("%s: %s", p, r.body)
		}
	}
	a, b := ts.newSession(), ts.newSession()
	ts.lock(a, "held", 0)
	ts.call(b, "/v1/locks/held/enqueue", nil)
	ts.call(b, "/v1/semaphores/pool", map[string]int{"limit": 3})
	g := ts.lock(a, "idle", 0)
	ts.release(a, "idle", g.Token)

	r := ts.send(req{method: "GET", path: "/v1/stats"})
	expect(t, "stats", r, 200, "")
	var keys map[string]json.RawMessage
	r.decode(t, &keys)
	if len(keys) != 5 {
		t.Fatalf("stats has keys %v, want the five of dflockd v2", keys)
	}
	var st struct {
		Connections    int              `json:"connections"`
		Locks          []vocab.LockStat `json:"locks"`
		Semaphores     []vocab.SemStat  `json:"semaphores"`
		IdleLocks      []vocab.IdleStat `json:"idle_locks"`
		IdleSemaphores []vocab.IdleStat `json:"idle_semaphores"`
	}
	r.decode(t, &st)
	if st.Connections != 2 {
		t.Errorf("connections %d, want 2 (the two sessions)", st.Connections)
	}
	if len(st.Locks) != 1 || st.Locks[0].Key != "held" || st.Locks[0].Waiters != 1 || st.Locks[0].OwnerConnID == 0 {
		t.Errorf("locks %+v, want held with its owner and 1 waiter", st.Locks)
	}
	if len(st.Semaphores) != 1 || st.Semaphores[0] != (vocab.SemStat{Key: "pool", Limit: 3, Holders: 1}) {
		t.Errorf("semaphores %+v", st.Semaphores)
	}
	if len(st.IdleLocks) != 1 || st.IdleLocks[0].Key != "idle" || st.IdleSemaphores == nil {
		t.Errorf("idle locks %+v, idle semaphores %v", st.IdleLocks, st.IdleSemaphores)
	}

	// A server's own stats document (its --compat) replaces the engine's.
	custom := newServer(t, setup{cfg: Config{Stats: func() []byte {
		return []byte(`{"connections":7,"locks":[],"semaphores":[],"idle_locks":[],"idle_semaphores":[]}`)
	}}})
	r = custom.send(req{method: "GET", path: "/v1/stats"})
	if expect(t, "custom stats", r, 200, ""); string(r.body) != `{"connections":7,"locks":[],"semaphores":[],"idle_locks":[],"idle_semaphores":[]}`+"\n" {
		t.Fatalf("custom stats: %q", r.body)
	}
}

func TestMetricsNotServed(t *testing.T) {
	ts := newServer(t, setup{noMetrics: true})
	expect(t, "GET /metrics without a handler", ts.send(req{method: "GET", path: "/metrics"}), 404, codeNotFound)
}
