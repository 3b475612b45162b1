package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

// newHTTPSession opens a session on m and returns its id.
func newHTTPSession(t *testing.T, m *httpMember) string {
	t.Helper()
	a := m.call("POST", "/v1/sessions", "", nil)
	var s struct {
		SessionID string `json:"session_id"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &s) != nil || s.SessionID == "" {
		t.Fatalf("POST /v1/sessions on %s: %s", m.id, a)
	}
	return s.SessionID
}

// TestHTTPSessionEndsWithLeader: an HTTP session lives on the leader
// that opened it; its id is not replicated. When that leader is killed,
// the session cannot be continued: a follower answers its calls 503
// not_leader naming the new leader, and the new leader answers 410
// session_gone with a detail that says why and what to do. The lock the
// session held stays held until its lease ends, and a new session on the
// new leader renews and releases it by its token.
func TestHTTPSessionEndsWithLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startHTTPMembers(t, 3)
	old := httpLeader(t, ms)
	sid := newHTTPSession(t, old)
	a := old.call("POST", "/v1/locks/report", sid, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 60})
	var g struct {
		Token string `json:"token"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &g) != nil || g.Token == "" {
		t.Fatalf("acquire on %s: %s", old.id, a)
	}

	next := killLeader(t, ms, old)
	for _, m := range ms {
		if m == old || m == next {
			continue
		}
		// A follower that knows the leader names it.
		within(t, failoverBudget, m.id+" naming the new leader", func() (bool, string) {
			a := m.call("POST", "/v1/locks/report/renew", sid, map[string]any{"token": g.Token, "lease_ttl_s": 60})
			return a.status == 503 && strings.Contains(string(a.body), `"not_leader"`) &&
				a.header.Get("X-Dflockd-Leader") == next.client, a.String()
		})
	}
	a = next.call("POST", "/v1/locks/report/renew", sid, map[string]any{"token": g.Token, "lease_ttl_s": 60})
	var e struct {
		Error, Detail string
	}
	if a.status != 410 || json.Unmarshal(a.body, &e) != nil || e.Error != "session_gone" ||
		!strings.Contains(e.Detail, "end with its leadership") || !strings.Contains(e.Detail, "by token") {
		t.Fatalf("the old session's renewal on the new leader %s: %s, want 410 session_gone saying why", next.id, a)
	}

	// Still held, against another session; renewed and released by token
	// from a new session.
	sid2 := newHTTPSession(t, next)
	if a := next.call("POST", "/v1/locks/report", sid2, map[string]int{"acquire_timeout_s": 0}); a.status != 200 ||
		!strings.Contains(string(a.body), `"status":"timeout"`) {
		t.Fatalf("try of the dead leader's lock from a new session: %s, want a timeout (held)", a)
	}
	if a := next.call("POST", "/v1/locks/report/renew", sid2, map[string]any{"token": g.Token, "lease_ttl_s": 60}); a.status != 200 {
		t.Fatalf("renewal by token from a new session: %s", a)
	}
	if a := next.call("POST", "/v1/locks/report/release", sid2, map[string]string{"token": g.Token}); a.status != 204 {
		t.Fatalf("release by token from a new session: %s", a)
	}
	if a := next.call("POST", "/v1/locks/report", sid2, map[string]int{"acquire_timeout_s": 0}); a.status != 200 ||
		!strings.Contains(string(a.body), `"status":"ok"`) {
		t.Fatalf("acquire after the release: %s, want granted", a)
	}

	// A member's line-protocol requests, answered through the log, are
	// in its latency histogram (each observed before its reply is
	// written, so before ask returns).
	for range 2 {
		if got := ask(next.client, "incr", "hits", "1", failoverBudget); !strings.HasPrefix(got, "ok ") {
			t.Fatalf("incr on %s: %q", next.id, got)
		}
	}
	metrics := string(next.call("GET", "/metrics", "", nil).body)
	if want := `dflockd_request_duration_seconds_count{command="incr"} 2`; !strings.Contains(metrics, want+"\n") {
		t.Fatalf("%s's /metrics lacks %q:\n%s", next.id, want, metrics)
	}
}

// TestHTTPStableRefSessionTakesOverAfterLeaderKill: with --orphan-ttl, an
// HTTP session created with a stable_ref holds a lock when the leader is
// killed. A session created on the new leader with the same stable_ref
// takes the old one's engine session over: its acquire of the key
// answers the token the old session held (where a session without it
// waits behind that lock), and it releases the lock by that token.
func TestHTTPStableRefSessionTakesOverAfterLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startHTTPMembers(t, 3, "--orphan-ttl", "30")
	old := httpLeader(t, ms)
	ref := map[string]string{"stable_ref": "web-7"}
	a := old.call("POST", "/v1/sessions", "", ref)
	var s struct {
		SessionID string `json:"session_id"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &s) != nil {
		t.Fatalf("POST /v1/sessions with a stable_ref on %s: %s", old.id, a)
	}
	a = old.call("POST", "/v1/locks/report", s.SessionID, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 60})
	var g struct {
		Status, Token string
	}
	if a.status != 200 || json.Unmarshal(a.body, &g) != nil || g.Status != "ok" {
		t.Fatalf("acquire on %s: %s", old.id, a)
	}

	next := killLeader(t, ms, old)
	other := newHTTPSession(t, next)
	if a := next.call("POST", "/v1/locks/report", other, map[string]int{"acquire_timeout_s": 0}); !strings.Contains(string(a.body), `"status":"timeout"`) {
		t.Fatalf("try from a session without the ref: %s, want a timeout (held by the orphan)", a)
	}
	a = next.call("POST", "/v1/sessions", "", ref)
	if a.status != 200 || json.Unmarshal(a.body, &s) != nil {
		t.Fatalf("POST /v1/sessions with the stable_ref on %s: %s", next.id, a)
	}
	a = next.call("POST", "/v1/locks/report", s.SessionID, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 60})
	var g2 struct {
		Status, Token string
	}
	if a.status != 200 || json.Unmarshal(a.body, &g2) != nil || g2.Status != "ok" || g2.Token != g.Token {
		t.Fatalf("acquire by the session that took the orphan over: %s, want the held token %s back", a, g.Token)
	}
	if a := next.call("POST", "/v1/locks/report/release", s.SessionID, map[string]string{"token": g.Token}); a.status != 204 {
		t.Fatalf("release: %s", a)
	}
	if a := next.call("POST", "/v1/locks/report", other, map[string]int{"acquire_timeout_s": 0}); !strings.Contains(string(a.body), `"status":"ok"`) {
		t.Fatalf("try after the release: %s, want granted", a)
	}
}

// killLeader kills the leader old with SIGKILL and returns the member
// that leads next, once it answers /v1/readindex (a read only a leader
// serves).
func killLeader(t *testing.T, ms []*httpMember, old *httpMember) *httpMember {
	t.Helper()
	old.signal(syscall.SIGKILL)
	var next *httpMember
	within(t, failoverBudget, "a new leader answering /v1/readindex", func() (bool, string) {
		for _, m := range ms {
			if m != old && m.call("GET", "/v1/readindex", "", nil).status == 200 {
				next = m
				return true, ""
			}
		}
		return false, "none"
	})
	t.Logf("%s killed, %s leads", old.id, next.id)
	return next
}
