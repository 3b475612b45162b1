package httpapi

import (
	"strings"
	"testing"
)

func (ts *testServer) hotKeys(query string) hotKeysReply {
	ts.t.Helper()
	r := ts.send(req{method: "GET", path: "/v1/hotkeys" + query})
	expect(ts.t, "GET /v1/hotkeys"+query, r, 200, "")
	var hr hotKeysReply
	r.decode(ts.t, &hr)
	return hr
}

// GET /v1/hotkeys ranks keys by grants, and carries the wait and hold
// histograms; the answers are checked against the OpenAPI document by
// the harness's transport.
func TestHotKeysRoute(t *testing.T) {
	ts := observed(t, Config{})
	a := ts.newSession()
	for range 3 {
		ts.release(a, "hot", ts.lock(a, "hot", 0).Token)
	}
	ts.release(a, "warm", ts.lock(a, "warm", 0).Token)
	ts.release(a, "cold", ts.lock(a, "cold", 0).Token)
	ts.release(a, "warm", ts.lock(a, "warm", 0).Token)
	hr := ts.hotKeys("?limit=2")
	if !hr.Events || len(hr.ByGrants) != 2 || hr.ByGrants[0].Key != "hot" || hr.ByGrants[0].Count != 3 ||
		hr.ByGrants[1].Key != "warm" || hr.ByGrants[1].Count != 2 || hr.Grants != 6 {
		t.Fatalf("hot keys: %+v", hr)
	}
	l := hr.Latency
	if len(l.Wait.Counts) != len(l.BoundsMs)+1 || l.Wait.Count != 6 || l.Hold.Count != 6 || l.Wait.Counts[0] != 6 {
		t.Fatalf("histograms: %+v", l)
	}
	expect(t, "limit 0", ts.send(req{method: "GET", path: "/v1/hotkeys?limit=0"}), 400, codeBadRequest)
	expect(t, "limit 101", ts.send(req{method: "GET", path: "/v1/hotkeys?limit=101"}), 400, codeBadRequest)

	// Without event recording: no hot keys, the histograms still count.
	off := newServer(t, setup{})
	b := off.newSession()
	off.release(b, "k", off.lock(b, "k", 0).Token)
	if hr := off.hotKeys(""); hr.Events || len(hr.ByGrants) != 0 || hr.Latency.Hold.Count != 1 {
		t.Fatalf("without events: %+v", hr)
	}
}

// The page carries the hot-keys panel's script inline, its CSP allows
// exactly that script by hash, and /v1/hotkeys wants the token.
func TestHotPanelOnThePage(t *testing.T) {
	ts := observed(t, Config{AuthToken: "tok"})
	expect(t, "GET /v1/hotkeys without the token", ts.send(req{method: "GET", path: "/v1/hotkeys"}), 401, codeUnauthorized)
	r := ts.send(req{method: "GET", path: "/ui"})
	page := string(r.body)
	if r.status != 200 || !strings.Contains(page, `id="hot"`) || !strings.Contains(page, "/v1/hotkeys") || strings.Contains(page, "/*HOT*/") {
		t.Fatalf("GET /ui: %d, the hot panel or its script is missing", r.status)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, cspHash(uiHot)) || !strings.Contains(csp, cspHash(uiScript)) {
		t.Fatalf("the CSP does not allow both scripts: %s", csp)
	}
}

// A lock and a semaphore of one name are two resources (v2): two rows,
// each with its kind and its own count.
func TestHotKeysPerKind(t *testing.T) {
	ts := observed(t, Config{})
	a := ts.newSession()
	for range 2 {
		ts.release(a, "x", ts.lock(a, "x", 0).Token)
	}
	for range 3 {
		g := ts.call(a, "/v1/semaphores/x", map[string]int64{"acquire_timeout_s": 0, "limit": 3})
		r := ts.send(req{method: "POST", path: "/v1/semaphores/x/release", body: map[string]string{"token": g.Token}, session: a})
		expect(t, "semaphore release", r, 204, "")
	}
	hr := ts.hotKeys("")
	want := []hotKeyJSON{{Key: "x", Kind: "semaphore", Count: 3}, {Key: "x", Kind: "lock", Count: 2}}
	if len(hr.ByGrants) != 2 || hr.ByGrants[0] != want[0] || hr.ByGrants[1] != want[1] {
		t.Fatalf("by grants: %+v, want %+v", hr.ByGrants, want)
	}
}
