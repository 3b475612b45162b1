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
