package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

const httpPolicy = `identity team-a
  token %A
  allow lock,signal,listen a.*
  allow observe a.*
identity team-b
  token %B
  allow lock b.*
identity ops
  token %O
  allow observe,metrics,admin *
`

func policyServer(t *testing.T) *testServer {
	src := strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%B", policy.TokenHash("tok-b"),
		"%O", policy.TokenHash("tok-ops")).Replace(httpPolicy)
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, setup{sess: session.Config{Policy: p}})
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// The HTTP API under a policy: the bearer token names the identity; a
// route on another team's key is 403 forbidden with the deciding rule; a
// session is its opener's only; an unknown token is 401; the unscoped
// lists need observe on every key.
func TestHTTPPolicy(t *testing.T) {
	ts := policyServer(t)
	expect(t, "no token", ts.send(req{method: "POST", path: "/v1/sessions"}), 401, codeUnauthorized)
	expect(t, "unknown token", ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("tok-x")}), 401, codeUnauthorized)

	open := func(tok string) string {
		r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer(tok)})
		expect(t, "create session", r, 200, "")
		var s sessionReply
		r.decode(t, &s)
		return s.SessionID
	}
	sa, sb := open("tok-a"), open("tok-b")
	lockBody := map[string]int64{"acquire_timeout_s": 0}
	expect(t, "team-b locks b.x", ts.send(req{method: "POST", path: "/v1/locks/b.x", body: lockBody, session: sb, header: bearer("tok-b")}), 200, "")
	r := ts.send(req{method: "POST", path: "/v1/locks/b.x", body: lockBody, session: sa, header: bearer("tok-a")})
	expect(t, "team-a locks b.x", r, 403, codeForbidden)
	if !strings.Contains(string(r.body), "deny by default") {
		t.Fatalf("403 without the reason: %s", r.body)
	}
	expect(t, "team-a locks a.x", ts.send(req{method: "POST", path: "/v1/locks/a.x", body: lockBody, session: sa, header: bearer("tok-a")}), 200, "")
	expect(t, "team-a uses team-b's session", ts.send(req{method: "POST", path: "/v1/locks/a.y", body: lockBody, session: sb, header: bearer("tok-a")}), 410, codeSessionGone)
	expect(t, "team-a signals b.x", ts.send(req{method: "POST", path: "/v1/signals/b.x", body: map[string]string{"payload": "p"}, header: bearer("tok-a")}), 403, codeForbidden)
	expect(t, "team-a's key view of a.x", ts.send(req{method: "GET", path: "/v1/keys/a.x", header: bearer("tok-a")}), 200, "")
	expect(t, "team-a's key view of b.x", ts.send(req{method: "GET", path: "/v1/keys/b.x", header: bearer("tok-a")}), 403, codeForbidden)
	// The lists are scoped: team-a sees its keys, with who holds them.
	r = ts.send(req{method: "GET", path: "/v1/keys", header: bearer("tok-a")})
	expect(t, "team-a's list of keys", r, 200, "")
	var keys keysReply
	r.decode(t, &keys)
	if len(keys.Keys) != 1 || keys.Keys[0].Key != "a.x" || keys.Keys[0].Holders[0].Client.Identity != "team-a" {
		t.Fatalf("team-a's keys: %s", r.body)
	}
	r = ts.send(req{method: "GET", path: "/v1/stats", header: bearer("tok-a")})
	expect(t, "team-a's stats", r, 200, "")
	if !strings.Contains(string(r.body), `"a.x"`) || strings.Contains(string(r.body), "b.x") {
		t.Fatalf("team-a's stats: %s", r.body)
	}
	expect(t, "team-b's stats (no observe)", ts.send(req{method: "GET", path: "/v1/stats", header: bearer("tok-b")}), 403, codeForbidden)
	r = ts.send(req{method: "GET", path: "/v1/hotkeys", header: bearer("tok-a")})
	expect(t, "team-a's hot keys", r, 200, "")
	if strings.Contains(string(r.body), "b.x") {
		t.Fatalf("team-a's hot keys show b.x: %s", r.body)
	}
	expect(t, "team-a's metrics", ts.send(req{method: "GET", path: "/metrics", header: bearer("tok-a")}), 403, codeForbidden)
	expect(t, "team-a force-releases b.x", ts.send(req{method: "POST", path: "/v1/admin/locks/b.x/release", body: map[string]any{}, header: bearer("tok-a")}), 403, codeForbidden)
	r = ts.send(req{method: "GET", path: "/v1/keys", header: bearer("tok-ops")})
	expect(t, "ops' list of every key", r, 200, "")
	r.decode(t, &keys)
	if len(keys.Keys) != 2 || keys.Keys[1].Holders[0].Client.Identity != "team-b" {
		t.Fatalf("ops' keys: %s", r.body)
	}
	expect(t, "ops' stats", ts.send(req{method: "GET", path: "/v1/stats", header: bearer("tok-ops")}), 200, "")
	if st, ok := ts.lockStat("b.x"); !ok || st.Key != "b.x" {
		t.Fatal("team-b's lock did not survive team-a's attempts")
	}
	log := ts.hub.Refusals()
	if len(log) < 6 || log[0].Identity != "team-a" || log[0].Key != "b.x" {
		t.Fatalf("refusal log: %+v", log)
	}
}

// The acl routes: whoami for any identity, the log and check for admins;
// without a policy, 404.
func TestHTTPACLRoutes(t *testing.T) {
	ts := policyServer(t)
	r := ts.send(req{method: "GET", path: "/v1/acl/whoami", header: bearer("tok-a")})
	expect(t, "whoami", r, 200, "")
	var who whoamiReply
	r.decode(t, &who)
	if who.Identity != "team-a" || who.Everything || len(who.PolicyVersion) != 16 {
		t.Fatalf("whoami: %+v", who)
	}
	expect(t, "team-a reads the log", ts.send(req{method: "GET", path: "/v1/acl/log", header: bearer("tok-a")}), 403, codeForbidden)
	r = ts.send(req{method: "GET", path: "/v1/acl/log", header: bearer("tok-ops")})
	expect(t, "ops reads the log", r, 200, "")
	var log aclLogReply
	r.decode(t, &log)
	if len(log.Refusals) != 1 || log.Refusals[0].Identity != "team-a" || log.Refusals[0].Command != "GET /v1/acl/log" {
		t.Fatalf("log: %+v", log)
	}
	for _, tc := range []struct {
		q       string
		allowed bool
		reason  string
	}{
		{"identity=team-a&command=l&key=a.job", true, "allow lock,signal,listen a.*"},
		{"identity=team-a&command=l&key=b.job", false, "deny by default"},
		{"identity=team-a&command=listen&key=a.>", true, "allow lock,signal,listen a.*"},
		{"identity=team-b&command=ping&key=_", true, "not checked"},
		{"identity=team-b&command=stats&key=_", false, "names no key"},
	} {
		r := ts.send(req{method: "GET", path: "/v1/acl/check?" + tc.q, header: bearer("tok-ops")})
		expect(t, "check "+tc.q, r, 200, "")
		var c aclCheckReply
		r.decode(t, &c)
		if c.Allowed != tc.allowed || !strings.Contains(c.Reason, tc.reason) {
			t.Errorf("check %s: %+v, want allowed %v and %q", tc.q, c, tc.allowed, tc.reason)
		}
	}
	expect(t, "check of an unknown identity", ts.send(req{method: "GET", path: "/v1/acl/check?identity=x&command=l&key=k", header: bearer("tok-ops")}), 404, codeNotFound)
	expect(t, "check of an unknown command", ts.send(req{method: "GET", path: "/v1/acl/check?identity=team-a&command=zz&key=k", header: bearer("tok-ops")}), 400, codeBadRequest)

	plain := newServer(t, setup{})
	expect(t, "acl log without a policy", plain.send(req{method: "GET", path: "/v1/acl/log"}), 404, codeNotFound)
}

// A scoped caller's /v1/keys pages through only its keys: following the
// cursor yields each of them once, however the other identities' keys
// fall between them.
func TestHTTPPolicyScopedKeyPages(t *testing.T) {
	ts := policyServer(t)
	open := func(tok string) string {
		r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer(tok)})
		var s sessionReply
		r.decode(t, &s)
		return s.SessionID
	}
	sa, sb := open("tok-a"), open("tok-b")
	want := map[string]bool{}
	for i := range 40 {
		key, sid, tok := fmt.Sprintf("b.k%02d", i), sb, "tok-b"
		if i%4 == 0 {
			key, sid, tok = fmt.Sprintf("a.k%02d", i), sa, "tok-a"
			want[key] = true
		}
		expect(t, "lock "+key, ts.send(req{method: "POST", path: "/v1/locks/" + key,
			body: map[string]int64{"acquire_timeout_s": 0}, session: sid, header: bearer(tok)}), 200, "")
	}
	got := map[string]bool{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("the cursor does not end")
		}
		path := "/v1/keys?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := ts.send(req{method: "GET", path: path, header: bearer("tok-a")})
		expect(t, "page", r, 200, "")
		var page keysReply
		r.decode(t, &page)
		for _, k := range page.Keys {
			if got[k.Key] || !want[k.Key] {
				t.Fatalf("page %d: %q (seen %v, team-a's %v)", pages, k.Key, got[k.Key], want[k.Key])
			}
			got[k.Key] = true
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("pages gave %d of team-a's %d keys", len(got), len(want))
	}
}

// An identity's quotas count its HTTP sessions' claims with its
// connections': past locks=N, an HTTP acquire answers max_locks, as the
// API answers error_max_locks.
func TestHTTPPolicyQuota(t *testing.T) {
	p, err := policy.Parse([]byte("identity q\n token " + policy.TokenHash("tok-q") + "\n allow * *\n quota locks=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, setup{sess: session.Config{Policy: p}})
	r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("tok-q")})
	var s sessionReply
	r.decode(t, &s)
	body := map[string]int64{"acquire_timeout_s": 0}
	for _, k := range []string{"k1", "k2"} {
		expect(t, "lock "+k, ts.send(req{method: "POST", path: "/v1/locks/" + k, body: body, session: s.SessionID, header: bearer("tok-q")}), 200, "")
	}
	r = ts.send(req{method: "POST", path: "/v1/locks/k3", body: body, session: s.SessionID, header: bearer("tok-q")})
	if r.code() != codeMaxLocks {
		t.Fatalf("a third claim past locks=2: %d %s", r.status, r.body)
	}
}

// The rate quota paces HTTP requests: over it, a request is held until
// its turn, then served (200, not an error), and counts as paced.
func TestHTTPPolicyRatePaces(t *testing.T) {
	p, err := policy.Parse([]byte("identity q\n token " + policy.TokenHash("tok-q") + "\n allow * *\n quota rate=20\n"))
	if err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the requests arrive at one instant, however
	// slowly the machine sends them.
	ts := newServer(t, setup{sess: session.Config{Policy: p}, fake: true})
	paced := func() uint64 {
		for _, u := range ts.hub.Usages() {
			if u.Name == "q" {
				return u.QuotaExceeded[session.QuotaRate].Load()
			}
		}
		return 0
	}
	var mu sync.Mutex
	var holds []time.Duration
	ts.api.hold = func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		holds = append(holds, d)
		mu.Unlock()
		return true
	}
	// rate=20 with its burst of 50 ms worth: one request at once, then
	// each 50 ms after the one before.
	for i := range 3 {
		expect(t, fmt.Sprint("stats ", i), ts.send(req{method: "GET", path: "/v1/stats", header: bearer("tok-q")}), 200, "")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}; !slices.Equal(holds, want) {
		t.Fatalf("requests held %v, want %v", holds, want)
	}
	if got := paced(); got != 2 {
		t.Fatalf("%d of 3 requests counted paced, want 2 (the first within the burst)", got)
	}
	// A client that leaves while held is not served: the route never
	// runs, and the handler aborts (nothing written, the connection
	// closed).
	ts.api.hold = func(context.Context, time.Duration) bool { return false }
	rec := httptest.NewRecorder()
	hr := httptest.NewRequest("POST", "/v1/sessions", nil)
	hr.Header.Set("Authorization", "Bearer tok-q")
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("a request whose client left while held: recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		ts.api.handler.ServeHTTP(rec, hr)
	}()
	if rec.Body.Len() != 0 || rec.Code != 200 || rec.Result().Header.Get("Content-Type") != "" {
		t.Fatalf("a request whose client left while held got %d %q", rec.Code, rec.Body.String())
	}
}
