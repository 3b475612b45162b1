package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

// A session is its opener's only, on every route that names it: another
// identity's DELETE, ping or lock call gets 410 as for an unknown id, and
// changes nothing: the session stays open with its lock, its idle time is
// not reset, and it is still reaped when it has been idle long enough (the
// refused lookups leave no call counted in flight, which would keep it
// from the sweeper for ever).
func TestHTTPPolicyForeignSession(t *testing.T) {
	src := strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%B", policy.TokenHash("tok-b"),
		"%O", policy.TokenHash("tok-ops")).Replace(httpPolicy)
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, setup{fake: true, cfg: Config{SessionIdleTimeout: time.Second}, sess: session.Config{Policy: p}})
	r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("tok-b")})
	expect(t, "team-b opens a session", r, 200, "")
	var s sessionReply
	r.decode(t, &s)
	sb := s.SessionID
	lockBody := map[string]int64{"acquire_timeout_s": 0, "lease_ttl_s": 3600}
	expect(t, "team-b locks b.x", ts.send(req{method: "POST", path: "/v1/locks/b.x", body: lockBody, session: sb, header: bearer("tok-b")}), 200, "")

	ts.advance(1500 * time.Millisecond)
	expect(t, "team-a pings team-b's session", ts.send(req{method: "POST", path: "/v1/sessions/" + sb + "/ping", header: bearer("tok-a")}), 410, codeSessionGone)
	expect(t, "team-a deletes team-b's session", ts.send(req{method: "DELETE", path: "/v1/sessions/" + sb, header: bearer("tok-a")}), 410, codeSessionGone)
	expect(t, "team-a calls with team-b's session", ts.send(req{method: "POST", path: "/v1/locks/a.y", body: lockBody, session: sb, header: bearer("tok-a")}), 410, codeSessionGone)
	if n := ts.api.Sessions(); n != 1 {
		t.Fatalf("%d sessions after team-a's attempts, want team-b's still open", n)
	}
	if _, held := ts.lockStat("b.x"); !held {
		t.Fatal("team-b's lock b.x was released by team-a's attempts")
	}
	// Idle since its lock call at 0: reaped at 2 s, whatever team-a did.
	ts.advance(499 * time.Millisecond)
	if n := ts.api.Sessions(); n != 1 {
		t.Fatalf("%d sessions 1.999 s after team-b's last call, want 1", n)
	}
	ts.advance(time.Millisecond)
	if n := ts.api.Sessions(); n != 0 {
		t.Fatalf("team-b's session idle for 2 s is not reaped (%d sessions): team-a's attempts kept it", n)
	}
	if _, held := ts.lockStat("b.x"); held {
		t.Fatal("the reaped session's lock is still held")
	}
}

// The server-wide routes need their class on every key: the refusal log
// (every identity's refusals, their keys and addresses), the check of
// another identity's rules, the metrics (every identity's figures) and
// the membership. An identity allowed everything on its own prefix is
// refused them, even with the admin token; one allowed them on * is not.
func TestHTTPPolicyServerWideRoutes(t *testing.T) {
	src := strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%B", policy.TokenHash("tok-b"),
		"%O", policy.TokenHash("tok-ops")).Replace(`identity team-a
  token %A
  allow * a.*
identity team-b
  token %B
  allow * b.*
identity ops
  token %O
  allow observe,metrics,admin *
`)
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	const admin = "admin-token-0123456789abcdef"
	ts := newServer(t, setup{cfg: Config{AdminToken: admin}, sess: session.Config{Policy: p}})
	// A refusal of team-b's, for the log.
	r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("tok-b")})
	var s sessionReply
	r.decode(t, &s)
	expect(t, "team-b locks a.x", ts.send(req{method: "POST", path: "/v1/locks/a.x", body: map[string]int64{"acquire_timeout_s": 0},
		session: s.SessionID, header: bearer("tok-b")}), 403, codeForbidden)
	withAdmin := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "X-Dflockd-Admin": admin}
	}
	voter := map[string]string{"node_id": "n9", "raft_addr": "127.0.0.1:1", "client_addr": "127.0.0.1:2"}
	for _, c := range []struct {
		method, path string
		body         any
		ops          int // what ops gets
	}{
		{"GET", "/v1/acl/log", nil, 200},
		{"GET", "/v1/acl/check?identity=team-b&command=l&key=b.x", nil, 200},
		{"GET", "/metrics", nil, 200},
		{"POST", "/v1/admin/voters", voter, 404}, // not a cluster member
		{"DELETE", "/v1/admin/voters/n3", nil, 404},
	} {
		r := ts.send(req{method: c.method, path: c.path, body: c.body, header: withAdmin("tok-a")})
		expect(t, "team-a "+c.method+" "+c.path, r, 403, codeForbidden)
		if strings.Contains(string(r.body), "team-b") {
			t.Fatalf("team-a's refusal of %s names team-b: %s", c.path, r.body)
		}
		if r := ts.send(req{method: c.method, path: c.path, body: c.body, header: withAdmin("tok-ops")}); r.status != c.ops {
			t.Fatalf("ops %s %s: %d %s, want %d", c.method, c.path, r.status, r.body, c.ops)
		}
	}
	r = ts.send(req{method: "GET", path: "/v1/acl/log", header: bearer("tok-ops")})
	if !strings.Contains(string(r.body), `"identity":"team-b"`) {
		t.Fatalf("ops's refusal log lacks team-b's refusal: %s", r.body)
	}
}
