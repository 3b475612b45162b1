package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

// observed is a test server that records lock events.
func observed(t *testing.T, cfg Config) *testServer {
	return newServer(t, setup{cfg: cfg, eng: engine.Config{Events: 4096}})
}

func (ts *testServer) keys(query string) keysReply {
	ts.t.Helper()
	r := ts.send(req{method: "GET", path: "/v1/keys" + query})
	expect(ts.t, "GET /v1/keys"+query, r, 200, "")
	var kr keysReply
	r.decode(ts.t, &kr)
	return kr
}

// The keys route shows each holder with its identity and the FIFO
// behind it, pages with its cursor, and filters by prefix and kind.
func TestKeysHoldersAndQueue(t *testing.T) {
	ts := observed(t, Config{})
	a, b := ts.newSession(), ts.newSession()
	g := ts.lock(a, "jobs%2F1", 0)
	waiting := async(func() grant { return ts.lock(b, "jobs%2F1", 30) })
	eventually(t, "b queued", func() bool { st, _ := ts.lockStat("jobs/1"); return st.Waiters == 1 })
	kr := ts.keys("?prefix=jobs%2F&kind=lock")
	if len(kr.Keys) != 1 || !kr.Events || kr.NextCursor != "" {
		t.Fatalf("%+v", kr)
	}
	k := kr.Keys[0]
	if k.Key != "jobs/1" || k.Kind != "lock" || k.HoldersTotal != 1 || k.WaitersTotal != 1 {
		t.Fatalf("%+v", k)
	}
	h, w := k.Holders[0], k.Waiters[0]
	if h.Client.Transport != "http" || h.Client.RemoteAddr != "127.0.0.1" || !h.Client.Open || h.Client.ConnectedMs == nil ||
		h.HeldMs == nil || h.Renewals == nil || *h.Renewals != 0 || h.LeaseRemainingMs <= 0 {
		t.Fatalf("holder %+v", h)
	}
	if w.Client.Transport != "http" || !w.Blocked || w.Client.SessionID == h.Client.SessionID || w.TimeoutRemainingMs == nil {
		t.Fatalf("waiter %+v", w)
	}
	ts.release(a, "jobs%2F1", g.Token)
	await(t, "b's grant", waiting)
	// Pages: 5 keys by 2, each once, in order.
	for _, key := range []string{"p3", "p1", "p5", "p2", "p4"} {
		ts.lock(a, key, 0)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the cursor does not advance")
		}
		kr := ts.keys("?prefix=p&limit=2&cursor=" + url.QueryEscape(cursor))
		for _, k := range kr.Keys {
			got = append(got, k.Key)
		}
		if cursor = kr.NextCursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"p1", "p2", "p3", "p4", "p5"}) {
		t.Fatalf("pages: %v", got)
	}
	if kr := ts.keys("?kind=semaphore"); len(kr.Keys) != 0 {
		t.Fatalf("kind filter: %+v", kr.Keys)
	}
	for _, bad := range []string{"?kind=table", "?limit=0", "?limit=1001", "?cursor=%21"} {
		expect(t, "GET /v1/keys"+bad, ts.send(req{method: "GET", path: "/v1/keys" + bad}), 400, codeBadRequest)
	}
}

// A key's page has its entries and its timeline; an unknown key is 404.
func TestKeyTimeline(t *testing.T) {
	ts := observed(t, Config{})
	a := ts.newSession()
	g := ts.lock(a, "k", 0)
	ts.release(a, "k", g.Token)
	r := ts.send(req{method: "GET", path: "/v1/keys/k"})
	expect(t, "GET /v1/keys/k", r, 200, "")
	var kr keyReply
	r.decode(t, &kr)
	var kinds []string
	for _, e := range kr.Events {
		kinds = append(kinds, e.Kind)
	}
	if len(kr.Entries) != 1 || kr.Entries[0].HoldersTotal != 0 || !slices.Equal(kinds, []string{"grant", "release"}) ||
		kr.Events[0].Client.Transport != "http" || kr.Events[0].Fence == "" {
		t.Fatalf("%+v", kr)
	}
	expect(t, "an unknown key", ts.send(req{method: "GET", path: "/v1/keys/nothing"}), 404, codeNotFound)
}

// With --auth-token the JSON routes want it and the page does not (it
// asks for the token, and carries no data).
func TestObservatoryAuth(t *testing.T) {
	ts := observed(t, Config{AuthToken: "tok"})
	for _, p := range []string{"/v1/keys", "/v1/keys/k", "/v1/deadlocks", "/v1/events"} {
		expect(t, "GET "+p+" without the token", ts.send(req{method: "GET", path: p}), 401, codeUnauthorized)
	}
	r := ts.send(req{method: "GET", path: "/v1/keys", header: map[string]string{"Authorization": "Bearer tok"}})
	expect(t, "GET /v1/keys with the token", r, 200, "")
	r = ts.send(req{method: "GET", path: "/ui"})
	if r.status != 200 || !strings.Contains(string(r.body), "dflockd-ng observatory") ||
		!strings.Contains(r.header.Get("Content-Security-Policy"), "script-src 'sha256-") {
		t.Fatalf("GET /ui: %d %s", r.status, r.header)
	}
	if strings.Contains(string(r.body), "/*SCRIPT*/") || !strings.Contains(string(r.body), "/v1/events") {
		t.Fatal("the page's script is not inlined")
	}
}

// Over TLS the observatory is the same.
func TestObservatoryTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ts := newServer(t, setup{cfg: Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}, eng: engine.Config{Events: 64}})
	ts.tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	sid := ts.newSession()
	ts.lock(sid, "k", 0)
	if kr := ts.keys(""); len(kr.Keys) != 1 || kr.Keys[0].Holders[0].Client.Transport != "http" {
		t.Fatalf("%+v", kr)
	}
	s := openStream(t, ts, "/v1/events", "")
	if f := s.next(t); f.event != "lock" || !strings.Contains(f.data, `"key":"k"`) { // the history
		t.Fatalf("%+v", f)
	}
	ts.lock(sid, "k2", 0)
	if f := s.next(t); f.event != "lock" || !strings.Contains(f.data, `"key":"k2"`) {
		t.Fatalf("%+v", f)
	}
}

// Two HTTP sessions that each hold what the other waits for are a
// deadlock, in /v1/deadlocks and in /metrics.
func TestDeadlocksRoute(t *testing.T) {
	ts := newServer(t, setup{})
	a, b := ts.newSession(), ts.newSession()
	ts.lock(a, "x", 0)
	ts.lock(b, "y", 0)
	wa := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/y", body: map[string]int64{"acquire_timeout_s": 60}, session: a})
	})
	wb := async(func() *reply {
		return ts.send(req{method: "POST", path: "/v1/locks/x", body: map[string]int64{"acquire_timeout_s": 60}, session: b})
	})
	eventually(t, "both parked", func() bool {
		x, _ := ts.lockStat("x")
		y, _ := ts.lockStat("y")
		return x.Waiters == 1 && y.Waiters == 1
	})
	var dr deadlocksReply
	eventually(t, "the deadlock reported", func() bool {
		r := ts.send(req{method: "GET", path: "/v1/deadlocks"})
		dr = deadlocksReply{}
		r.decode(t, &dr)
		return len(dr.Deadlocks) == 1
	})
	d := dr.Deadlocks[0]
	if len(d.Sessions) != 2 || len(d.Keys) != 2 || d.Keys[0].Key != "x" || d.Keys[1].Key != "y" || len(d.Waits) != 2 ||
		d.Sessions[0].Transport != "http" {
		t.Fatalf("%+v", d)
	}
	r := ts.send(req{method: "GET", path: "/metrics"})
	if !strings.Contains(string(r.body), "\ndflockd_deadlocks 1\n") || !strings.Contains(string(r.body), "\ndflockd_deadlocks_detected_total 1\n") {
		t.Fatalf("metrics lack the deadlock:\n%s", grepLines(string(r.body), "dflockd_deadlocks"))
	}
	// Deleting a's session breaks it: b gets x.
	expect(t, "delete a", ts.send(req{method: "DELETE", path: "/v1/sessions/" + a}), 204, "")
	expect(t, "b's acquire", await(t, "b", wb), 200, "")
	await(t, "a's acquire", wa)
	eventually(t, "the deadlock gone", func() bool {
		r := ts.send(req{method: "GET", path: "/v1/deadlocks"})
		dr = deadlocksReply{}
		r.decode(t, &dr)
		return len(dr.Deadlocks) == 0
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// An operator's force release needs the admin token, hands the key on,
// shows on the timeline, and the old holder's release then finds nothing.
func TestForceReleaseRoute(t *testing.T) {
	off := newServer(t, setup{})
	expect(t, "without --admin-token", off.send(req{method: "POST", path: "/v1/admin/locks/k/release"}), 503, codeAdminDisabled)
	ts := observed(t, Config{AdminToken: "root"})
	a, b := ts.newSession(), ts.newSession()
	g := ts.lock(a, "k", 0)
	waiting := async(func() grant { return ts.lock(b, "k", 30) })
	eventually(t, "b queued", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	expect(t, "a wrong admin token", ts.send(req{method: "POST", path: "/v1/admin/locks/k/release",
		header: map[string]string{adminHeader: "nope"}}), 401, codeUnauthorized)
	expect(t, "a bad fence", ts.send(req{method: "POST", path: "/v1/admin/locks/k/release?fence=x",
		header: map[string]string{adminHeader: "root"}}), 400, codeBadRequest)
	r := ts.send(req{method: "POST", path: "/v1/admin/locks/k/release?reason=stuck+worker", header: map[string]string{adminHeader: "root"}})
	expect(t, "force release", r, 200, "")
	var fr forceReleaseReply
	r.decode(t, &fr)
	if fr.Released != 1 {
		t.Fatalf("%+v", fr)
	}
	if gb := await(t, "b's grant", waiting); gb.Status != "ok" {
		t.Fatalf("b: %+v", gb)
	}
	r = ts.send(req{method: "POST", path: "/v1/locks/k/release", body: map[string]string{"token": g.Token}, session: a})
	expect(t, "the old holder's release", r, 404, codeNotHeld)
	var kr keyReply
	ts.send(req{method: "GET", path: "/v1/keys/k"}).decode(t, &kr)
	var found bool
	for _, e := range kr.Events {
		found = found || (e.Kind == "force_release" && strings.Contains(e.Note, "stuck worker") && strings.Contains(e.Note, "127.0.0.1"))
	}
	if !found {
		t.Fatalf("no force_release on the timeline: %+v", kr.Events)
	}
}

// frame is one server-sent event.
type frame struct{ id, event, data string }

type frameOK struct {
	f  frame
	ok bool
}

func (f frameOK) split() (frame, bool) { return f.f, f.ok }

type stream struct {
	frames <-chan frame
	cancel context.CancelFunc
	resp   *http.Response
}

// openStream opens an event stream (with the plain transport: the
// validating one would read the endless body) and parses its frames.
func openStream(t *testing.T, ts *testServer, path, lastID string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, "GET", ts.url+path, nil)
	if lastID != "" {
		hr.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ts.tr.RoundTrip(hr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header)
	}
	ch := make(chan frame, 1024)
	go func() {
		defer close(ch)
		br := bufio.NewReader(resp.Body)
		var f frame
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if f.event != "" || f.data != "" {
					ch <- f
				}
				f = frame{}
			case strings.HasPrefix(line, "id: "):
				f.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				f.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				f.data = line[6:]
			}
		}
	}()
	s := &stream{frames: ch, cancel: cancel, resp: resp}
	t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

func (s *stream) next(t *testing.T) frame {
	t.Helper()
	f, ok := await(t, "an event", async(func() frameOK { f, ok := <-s.frames; return frameOK{f, ok} })).split()
	if !ok {
		t.Fatal("the stream ended")
	}
	return f
}

// The stream carries each lock event once, in order; a reconnect with
// Last-Event-ID resumes after it; an id from elsewhere gets a reset.
func TestEventStreamResume(t *testing.T) {
	ts := observed(t, Config{})
	a := ts.newSession()
	s := openStream(t, ts, "/v1/events?prefix=r", "")
	g := ts.lock(a, "r1", 0)
	ts.lock(a, "other", 0) // filtered out by the prefix
	ts.release(a, "r1", g.Token)
	f1, f2 := s.next(t), s.next(t)
	if !strings.Contains(f1.data, `"kind":"grant"`) || !strings.Contains(f2.data, `"kind":"release"`) || f1.id == "" || f1.id == f2.id {
		t.Fatalf("%+v %+v", f1, f2)
	}
	s.close()
	// Missed while away: another grant and release of r1. Whether the
	// merger took them before the reconnect (the backlog) or after (live),
	// they come once.
	g = ts.lock(a, "r1", 0)
	ts.release(a, "r1", g.Token)
	s = openStream(t, ts, "/v1/events?prefix=r", f2.id)
	f3, f4 := s.next(t), s.next(t)
	if !strings.Contains(f3.data, `"kind":"grant"`) || !strings.Contains(f4.data, `"kind":"release"`) || f3.id == f2.id {
		t.Fatalf("resumed with %+v %+v", f3, f4)
	}
	r := openStream(t, ts, "/v1/events", "another-server.7")
	if f := r.next(t); f.event != "reset" {
		t.Fatalf("a foreign id: %+v", f)
	}
}

// A reader that does not keep up is cut off, and its queue is bounded:
// the merger never waits for it.
func TestSlowStreamReaderIsCut(t *testing.T) {
	ts := observed(t, Config{})
	sub, _, _, ok := ts.api.events.subscribe("", "")
	if !ok {
		t.Fatal("subscribe refused")
	}
	defer ts.api.events.unsubscribe(sub)
	eng := ts.hub.Engine()
	sid := ts.newSession()
	// More events than the reader's queue holds, while it reads none.
	for i := 0; i < subscriberBuffer/2+1; i++ {
		g := ts.lock(sid, "slow", 0)
		ts.release(sid, "slow", g.Token)
	}
	if eng.EventHead(0)+eng.EventHead(1)+eng.EventHead(2)+eng.EventHead(3) < subscriberBuffer {
		t.Fatal("not enough events recorded")
	}
	await(t, "the cut", async(func() bool { <-sub.cut; return true }))
	if n := len(sub.ch); n != subscriberBuffer {
		t.Fatalf("the cut reader's queue holds %d events, want its bound %d", n, subscriberBuffer)
	}
	ts.api.events.mu.Lock()
	_, still := ts.api.events.subs[sub]
	ts.api.events.mu.Unlock()
	if still {
		t.Fatal("a cut reader is still fed")
	}
}

// Without event recording, the stream says so rather than staying silent.
func TestEventStreamOff(t *testing.T) {
	ts := newServer(t, setup{})
	expect(t, "GET /v1/events", ts.send(req{method: "GET", path: "/v1/events"}), 404, codeNotFound)
}

// A new reader of the stream gets a defined history, the ring's last
// events of its prefix, whoever read before it and whenever they left;
// Last-Event-ID resumes exactly after the id given (issue #34): two
// readers one after the other, with events before, between and after.
func TestEventStreamHistoryForNewReaders(t *testing.T) {
	ts := observed(t, Config{})
	a := ts.newSession()
	// One key, so one shard: its events merge in the order they happened.
	cycle := func() {
		g := ts.lock(a, "hist", 0)
		ts.release(a, "hist", g.Token)
	}
	read := func(s *stream, n int) []frame {
		t.Helper()
		out := make([]frame, n)
		for i := range out {
			out[i] = s.next(t)
		}
		return out
	}
	stopped := func() {
		t.Helper()
		eventually(t, "the merger stopped", func() bool {
			ts.api.events.mu.Lock()
			defer ts.api.events.mu.Unlock()
			return !ts.api.events.running && len(ts.api.events.subs) == 0
		})
	}

	cycle() // before anyone reads
	s1 := openStream(t, ts, "/v1/events?prefix=hi", "")
	cycle()
	first := read(s1, 4) // the first cycle from its history, the second live
	s1.close()
	stopped()
	cycle() // while nobody reads
	s2 := openStream(t, ts, "/v1/events?prefix=hi", "")
	cycle()
	second := read(s2, 8) // all four cycles, history then live
	if got, want := describe(t, second), describe(t, first); !slices.Equal(got[:4], want) {
		t.Fatalf("the second reader's first events:\n%q\nthe first reader's:\n%q", got[:4], want)
	}
	if k := kinds(t, second); !slices.Equal(k, []string{"grant", "release", "grant", "release", "grant", "release", "grant", "release"}) {
		t.Fatalf("the second reader got %q", describe(t, second))
	}
	s2.close()
	stopped()

	// Resuming after the first reader's last event: exactly the two
	// cycles after it, then what comes next.
	s3 := openStream(t, ts, "/v1/events?prefix=hi", first[3].id)
	cycle()
	resumed := read(s3, 6)
	if got, want := describe(t, resumed[:4]), describe(t, second[4:]); !slices.Equal(got, want) {
		t.Fatalf("resumed after %s with\n%q\nwant\n%q", first[3].id, got, want)
	}
	if k := kinds(t, resumed[4:]); !slices.Equal(k, []string{"grant", "release"}) {
		t.Fatalf("after the missed events: %q", describe(t, resumed[4:]))
	}
}

// describe writes frames as "id kind fence" for comparing readers.
func describe(t *testing.T, fs []frame) []string {
	t.Helper()
	out := make([]string, len(fs))
	for i, f := range fs {
		var e eventJSON
		if err := json.Unmarshal([]byte(f.data), &e); err != nil || f.event != "lock" {
			t.Fatalf("frame %+v: %v", f, err)
		}
		out[i] = f.id + " " + e.Kind + " " + e.Fence
	}
	return out
}

func kinds(t *testing.T, fs []frame) []string {
	t.Helper()
	out := describe(t, fs)
	for i, d := range out {
		f := strings.Fields(d)
		out[i] = f[1]
	}
	return out
}

// The log line of a deadlock names its sessions as the page and dflockctl
// do, by connection number ("#17"), not by the engine's session ids
// (issue #34).
func TestDeadlockLogNamesConnections(t *testing.T) {
	var log logLines
	ts := newServer(t, setup{cfg: Config{Logf: log.logf}})
	a, b := ts.newSession(), ts.newSession()
	ts.lock(a, "x", 0)
	ts.lock(b, "y", 0)
	park := func(sid, key string) <-chan *reply {
		return async(func() *reply {
			return ts.send(req{method: "POST", path: "/v1/locks/" + key, body: map[string]int64{"acquire_timeout_s": 60}, session: sid})
		})
	}
	wa, wb := park(a, "y"), park(b, "x")
	var dr deadlocksReply
	eventually(t, "the deadlock reported", func() bool {
		dr = deadlocksReply{}
		ts.send(req{method: "GET", path: "/v1/deadlocks"}).decode(t, &dr)
		return len(dr.Deadlocks) == 1
	})
	line := log.find("deadlock")
	for _, s := range dr.Deadlocks[0].Sessions {
		if !strings.Contains(line, "#"+s.ConnID) || strings.Contains(line, s.SessionID) {
			t.Errorf("the log line %q: want session %s named #%s, as the page and dflockctl name it", line, s.SessionID, s.ConnID)
		}
	}
	// Ending it (a's session deleted) lets the parked requests return.
	expect(t, "delete a", ts.send(req{method: "DELETE", path: "/v1/sessions/" + a}), 204, "")
	await(t, "a's acquire", wa)
	expect(t, "b's acquire", await(t, "b", wb), 200, "")
}

// logLines records a server's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

// find returns the first line containing sub, "" if none.
func (l *logLines) find(sub string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return s
		}
	}
	return ""
}

// A force release without ?fence= logs the fence of the holder it
// released, not "fence 0" (issue #34).
func TestForceReleaseLogsFence(t *testing.T) {
	var log logLines
	ts := newServer(t, setup{cfg: Config{AdminToken: "root", Logf: log.logf}})
	a := ts.newSession()
	ts.lock(a, "stuck", 0)
	holders := ts.keys("?prefix=stuck").Keys[0].Holders
	if len(holders) != 1 {
		t.Fatalf("holders of stuck: %+v", holders)
	}
	expect(t, "force release", ts.send(req{method: "POST", path: "/v1/admin/locks/stuck/release", header: map[string]string{adminHeader: "root"}}), 200, "")
	line := log.find("force release")
	if want := "fence " + holders[0].Fence; !strings.Contains(line, want) || strings.Contains(line, "fence 0") {
		t.Errorf("the log line %q: want the released holder's %q", line, want)
	}
}

// With Config.Log, a deadlock and a force release are logged with their
// data in attributes, not packed into the message (issue #36).
func TestOperatorEventsAsAttributes(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	ts := newServer(t, setup{cfg: Config{AdminToken: "root", Log: log}})
	a, b := ts.newSession(), ts.newSession()
	ts.lock(a, "x", 0)
	ts.lock(b, "y", 0)
	park := func(sid, key string) <-chan *reply {
		return async(func() *reply {
			return ts.send(req{method: "POST", path: "/v1/locks/" + key, body: map[string]int64{"acquire_timeout_s": 60}, session: sid})
		})
	}
	wa, wb := park(a, "y"), park(b, "x")
	eventually(t, "the deadlock found and logged", func() bool {
		ts.send(req{method: "GET", path: "/v1/deadlocks"}) // a check runs as it is asked
		return strings.Contains(buf.String(), "deadlock")
	})
	expect(t, "force release of x", ts.send(req{method: "POST", path: "/v1/admin/locks/x/release", header: map[string]string{adminHeader: "root"}}), 200, "")
	expect(t, "b's acquire of x", await(t, "b", wb), 200, "")
	expect(t, "delete a", ts.send(req{method: "DELETE", path: "/v1/sessions/" + a}), 204, "")
	await(t, "a's acquire", wa)
	var sawDeadlock, sawRelease bool
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		switch m["msg"] {
		case "deadlock: connections wait for each other":
			sawDeadlock = m["connections"] != nil && strings.Contains(fmt.Sprint(m["keys"]), "x")
		case "admin: force release":
			sawRelease = m["key"] == "x" && m["kind"] == "lock" && strings.Contains(fmt.Sprint(m["released"]), "fence") &&
				strings.HasPrefix(fmt.Sprint(m["by"]), "admin@")
		}
	}
	if !sawDeadlock || !sawRelease {
		t.Fatalf("log lines (deadlock %v, force release %v):\n%s", sawDeadlock, sawRelease, buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
