package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The test servers: a real engine and hub in process, the API on a
// loopback listener, and a net/http client whose transport checks every
// answer against the OpenAPI document (openapi_test.go).

// setup is what a test server is built from.
type setup struct {
	cfg  Config
	eng  engine.Config
	sess session.Config
	// fake runs the hub and the API on a fake clock that only the test
	// moves (testServer.advance); the hub's housekeeping is not started.
	fake bool
	// noMetrics leaves Config.Metrics nil (else the harness serves the
	// server's registry there).
	noMetrics bool
}

type testServer struct {
	t    testing.TB
	hub  *session.Hub
	api  *API
	fake *timerwheel.FakeClock // nil on the real clock
	url  string
	addr string
	tr   *http.Transport
	c    *http.Client // validating
	reg  *prometheus.Registry
}

// newServer starts a server of su; the test's cleanup stops it.
func newServer(t testing.TB, su setup) *testServer {
	t.Helper()
	ts := &testServer{t: t}
	var clock timerwheel.Clock = timerwheel.NewMonoClock()
	if su.fake {
		ts.fake = timerwheel.NewFakeClock(1000)
		clock = ts.fake
	}
	if su.eng.Shards == 0 {
		su.eng.Shards = 4
	}
	ts.hub = session.NewServerHub(su.sess, su.eng, clock, time.Hour)
	if !su.fake {
		ts.hub.Start()
	}
	ts.reg = prometheus.NewRegistry()
	if su.cfg.Registerer == nil {
		su.cfg.Registerer = ts.reg
	}
	if su.cfg.Metrics == nil && !su.noMetrics {
		su.cfg.Metrics = promhttp.HandlerFor(ts.reg, promhttp.HandlerOpts{})
	}
	if su.cfg.Logf == nil {
		su.cfg.Logf = t.Logf
	}
	ts.api = New(ts.hub, su.cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = l.Addr().String()
	ts.url = "http://" + ts.addr
	if su.cfg.TLS != nil {
		ts.url = "https://" + ts.addr
	}
	done := make(chan error, 1)
	go func() { done <- ts.api.Serve(l) }()
	ts.tr = &http.Transport{MaxIdleConnsPerHost: 64}
	ts.c = &http.Client{Transport: &validatingTransport{base: ts.tr, t: t}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := ts.api.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ts.tr.CloseIdleConnections()
		if !su.fake {
			ts.hub.Stop()
		}
	})
	return ts
}

// advance moves the fake clock by d and fires what is due by then: the
// engine's timers (leases, timeouts) and the API's (session expiry).
func (ts *testServer) advance(d time.Duration) {
	ts.t.Helper()
	if ts.fake == nil {
		ts.t.Fatal("advance needs a fake-clock server")
	}
	ts.fake.Add(timerwheel.Tick(d.Milliseconds()))
	var fx engine.Effects
	for i := range ts.hub.Engine().Shards() {
		ts.hub.Advance(i, &fx)
	}
	ts.api.timers.runDue()
}

// reply is an answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// code is the error code of an error answer, "" for another answer.
func (r *reply) code() string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error
}

func (r *reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("answer %d %q: %v", r.status, r.body, err)
	}
}

// req is one request of a test.
type req struct {
	method, path string
	// body: nil for none, a string as is, anything else as JSON.
	body    any
	session string            // X-Dflockd-Session
	header  map[string]string // more headers
	ctx     context.Context
}

// send makes the request with the validating client and reads the answer
// whole; a transport error fails the test.
func (ts *testServer) send(r req) *reply {
	ts.t.Helper()
	rep, err := ts.trySend(r)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return rep
}

func (ts *testServer) trySend(r req) (*reply, error) {
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(j)
	}
	ctx := r.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	hr, err := http.NewRequestWithContext(ctx, r.method, ts.url+r.path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.session != "" {
		hr.Header.Set(sessionHeader, r.session)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	resp, err := ts.c.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// expect fails the test unless r has the status and (for errors) code.
func expect(t testing.TB, what string, r *reply, status int, code string) {
	t.Helper()
	if r.status != status || r.code() != code {
		t.Fatalf("%s: %d %s, want %d %q", what, r.status, strings.TrimSpace(string(r.body)), status, code)
	}
}

// newSession opens a session and returns its id.
func (ts *testServer) newSession() string {
	ts.t.Helper()
	r := ts.send(req{method: "POST", path: "/v1/sessions"})
	expect(ts.t, "create session", r, 200, "")
	var s sessionReply
	r.decode(ts.t, &s)
	return s.SessionID
}

// grant is a decoded acquire, enqueue or wait answer.
type grant struct {
	Status    string `json:"status"`
	Token     string `json:"token"`
	LeaseTTLS int64  `json:"lease_ttl_s"`
}

// call makes a lock or semaphore call of session sid and expects 200.
func (ts *testServer) call(sid, path string, body any) grant {
	ts.t.Helper()
	r := ts.send(req{method: "POST", path: path, body: body, session: sid})
	expect(ts.t, "POST "+path, r, 200, "")
	var g grant
	r.decode(ts.t, &g)
	return g
}

// lock acquires key for sid, waiting up to timeout seconds.
func (ts *testServer) lock(sid, key string, timeout int64) grant {
	ts.t.Helper()
	return ts.call(sid, "/v1/locks/"+key, map[string]int64{"acquire_timeout_s": timeout})
}

// release releases key's token for sid and expects 204.
func (ts *testServer) release(sid, key, token string) {
	ts.t.Helper()
	r := ts.send(req{method: "POST", path: "/v1/locks/" + key + "/release", body: map[string]string{"token": token}, session: sid})
	expect(ts.t, "release "+key, r, 204, "")
}

// lockStat is the engine's view of key: its holder's connection and its
// waiters; ok is false if the key is not busy.
func (ts *testServer) lockStat(key string) (st vocab.LockStat, ok bool) {
	for _, l := range ts.hub.Engine().LockStats(ts.hub.Clock().Now(), 0).Locks {
		if l.Key == key {
			return l, true
		}
	}
	return vocab.LockStat{}, false
}

// eventually polls cond until it holds or a deadline passes. The
// deadline is generous: only something really stuck runs it out.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// async runs f on its own goroutine; the channel gets its result.
func async[T any](f func() T) <-chan T {
	ch := make(chan T, 1)
	go func() { ch <- f() }()
	return ch
}

// await receives from ch or fails the test after a deadline.
func await[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second): // generous, as eventually's
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// errCanceled reports a request that failed because its context ended.
func errCanceled(err error) bool { return errors.Is(err, context.Canceled) }
