package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// Isolation end to end (issue #35): two tenants on one server, each
// confined to its prefix by the policy, and an operator who observes
// everything. Tenant A tries every command and route on tenant B's keys,
// by every transport the server runs (the line protocol, the HTTP API
// with its observatory and SSE, godistlock), and must be refused each
// time, see none of B's keys, holders or events, and leave B's state as
// it was. The server runs as its own process (a single node, or three
// cluster members); A and B are separate connections of the test
// process, each with its own credentials, as the other process tests'
// clients are.

const isolationPolicy = `identity team-a
  token %A
  cert team-a.clients
  allow * a/*
identity team-b
  token %B
  allow * b/*
identity ops
  token %O
  allow observe,admin *
`

// writeIsolationPolicy writes src with the three identities' token hashes.
func writeIsolationPolicy(t *testing.T, file, src string) {
	t.Helper()
	writePolicy(t, file, strings.ReplaceAll(src, "%O", policy.TokenHash("tok-ops")))
}

// isoLedger counts A's attempts and logs each one: every attempt is
// expected to be refused (or, for a list, to show none of B's state).
type isoLedger struct {
	t                *testing.T
	refused, allowed int
}

func (l *isoLedger) expect(route string, refused bool, got string) {
	l.t.Helper()
	if len(got) > 300 {
		got = got[:300] + "..."
	}
	if refused {
		l.refused++
		l.t.Logf("refused: %s: %s", route, got)
		return
	}
	l.allowed++
	l.t.Errorf("NOT REFUSED: %s: %s", route, got)
}

func (l *isoLedger) summary() {
	l.t.Logf("isolation: %d attempts refused, %d allowed", l.refused, l.allowed)
}

// isoConn is a line-protocol connection, over TCP or TLS.
type isoConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

// dialIso connects (with TLS when cfg is set) and authenticates with
// token, unless it is "" (a certificate names the identity).
func dialIso(t *testing.T, addr string, cfg *tls.Config, token string) *isoConn {
	t.Helper()
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	} else {
		c, err = net.DialTimeout("tcp", addr, 10*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ic := &isoConn{t: t, c: c, rd: bufio.NewReader(c)}
	if token != "" {
		if got := ic.do("auth", "_", token); got != "ok" {
			t.Fatalf("auth %s on %s: %q", token, addr, got)
		}
	}
	return ic
}

func (c *isoConn) do(cmd, key, arg string) string {
	c.t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(c.c, cmd+"\n"+key+"\n"+arg+"\n"); err != nil {
		c.t.Fatalf("%s %s: %v", cmd, key, err)
	}
	line, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s %s %q: %v", cmd, key, arg, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// grant returns the token of a grant, failing the test on anything else.
func (c *isoConn) grant(cmd, key, arg string) string {
	c.t.Helper()
	got := c.do(cmd, key, arg)
	f := strings.Fields(got)
	if len(f) != 3 || (f[0] != "ok" && f[0] != "acquired") || len(f[1]) != 32 {
		c.t.Fatalf("%s %s %s: %q, want a grant", cmd, key, arg, got)
	}
	return f[1]
}

// isoHTTP calls one server's HTTP API as one identity.
type isoHTTP struct {
	t     *testing.T
	base  string // http://host:port or https://host:port
	token string
	hc    *http.Client
}

func newIsoHTTP(t *testing.T, base, token string, cfg *tls.Config) *isoHTTP {
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &isoHTTP{t: t, base: base, token: token, hc: &http.Client{Timeout: 15 * time.Second, Transport: tr}}
}

// call makes one request and reads its answer whole (at most 1 MiB; a
// stream is read for at most 2 s). header: extra headers, name then value.
func (h *isoHTTP) call(method, path, session string, body any, header ...string) (int, string) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	if session != "" {
		req.Header.Set("X-Dflockd-Session", session)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A stream that was not refused: what it sends in 2 s.
		timer := time.AfterFunc(2*time.Second, cancel)
		defer timer.Stop()
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// forbidden reports whether an answer is the policy's refusal.
func forbidden(status int, body string) bool {
	var e struct {
		Error string `json:"error"`
	}
	return status == 403 && json.Unmarshal([]byte(body), &e) == nil && e.Error == "forbidden"
}

// bState is what tenant B holds, for A to attack and ops to check.
type bState struct {
	lockTok, semTok, rwTok, electTok string
	fence                            uint64
	httpSession                      string
}

// setUpB gives tenant B a lock, a semaphore slot, a write lock, an
// election, a counter, a KV entry, a list, a subscription, a watch and an
// HTTP session holding a lock.
func setUpB(t *testing.T, b *isoConn, bh *isoHTTP) *bState {
	t.Helper()
	st := &bState{}
	st.lockTok = b.grant("l", "b/lock", "0 300")
	st.fence = grantFence(t, "ok "+st.lockTok+" 300")
	st.semTok = b.grant("sl", "b/sem", "0 1 300")
	st.rwTok = b.grant("wl", "b/rw", "0 300")
	st.electTok = b.grant("elect", "b/leader", "0 300")
	for _, req := range [][4]string{
		{"incr", "b/count", "5", "ok 5"},
		{"kset", "b/kv", "hello", "ok"},
		{"rpush", "b/list", "one", "ok 1"},
		{"rpush", "b/list", "two", "ok 2"},
		{"listen", "b/chan", "", "ok"},
		{"watch", "b/kv", "_", "ok"},
	} {
		if got := b.do(req[0], req[1], req[2]); got != req[3] {
			t.Fatalf("team-b %s %s %q: %q, want %q", req[0], req[1], req[2], got, req[3])
		}
	}
	// A refusal of B's own, which the refusal log shows its readers.
	if got := b.do("l", "c/not-b", "0"); got != "error_denied" {
		t.Fatalf("team-b l c/not-b: %q, want error_denied", got)
	}
	code, body := bh.call("POST", "/v1/sessions", "", nil)
	var s struct {
		SessionID string `json:"session_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &s) != nil {
		t.Fatalf("team-b POST /v1/sessions: %d %s", code, body)
	}
	st.httpSession = s.SessionID
	if code, body := bh.call("POST", "/v1/locks/"+url.PathEscape("b/http"), st.httpSession,
		map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 300}); code != 200 || !strings.Contains(body, `"token"`) {
		t.Fatalf("team-b's HTTP lock b/http: %d %s", code, body)
	}
	return st
}

// attackLine is A's every line-protocol command on B's keys: each must
// be error_denied; stats must show none of B's keys.
func attackLine(t *testing.T, led *isoLedger, where string, a *isoConn, st *bState) {
	t.Helper()
	for _, req := range [][3]string{
		{"l", "b/lock", "0 10"}, {"r", "b/lock", st.lockTok}, {"n", "b/lock", st.lockTok}, {"e", "b/lock", "10"}, {"w", "b/lock", "1"},
		{"sl", "b/sem", "0 1 10"}, {"sr", "b/sem", st.semTok}, {"sn", "b/sem", st.semTok}, {"se", "b/sem", "1 10"}, {"sw", "b/sem", "1"},
		{"rl", "b/rw", "0 10"}, {"wl", "b/rw", "0 10"}, {"rr", "b/rw", st.rwTok}, {"wr", "b/rw", st.rwTok},
		{"rn", "b/rw", st.rwTok}, {"wn", "b/rw", st.rwTok}, {"re", "b/rw", "10"}, {"we", "b/rw", "10"},
		{"rw", "b/rw", "1"}, {"ww", "b/rw", "1"},
		{"incr", "b/count", "1"}, {"decr", "b/count", "1"}, {"get", "b/count", "_"}, {"cset", "b/count", "99"},
		{"kset", "b/kv", "evil"}, {"kget", "b/kv", "_"}, {"kdel", "b/kv", "_"}, {"kcas", "b/kv", "hello\tevil\t0"},
		{"lpush", "b/list", "evil"}, {"rpush", "b/list", "evil"}, {"lpop", "b/list", "_"}, {"rpop", "b/list", "_"},
		{"llen", "b/list", "_"}, {"lrange", "b/list", "0 -1"}, {"blpop", "b/list", "1"}, {"brpop", "b/list", "1"},
		{"listen", "b.>", ""}, {"listen", ">", ""}, {"listen", "b/chan", ""}, {"listen", "*", ""}, {"listen", "*.>", ""},
		{"signal", "b/chan", "evil"}, {"signal", "b.chan", "evil"},
		{"watch", "b/x", "_"}, {"watch", "b/kv", "_"}, {"watch", ">", "_"}, {"watch", "*", "_"},
		{"bwait", "b/barrier", "2 1"},
		{"elect", "b/leader", "0 10"}, {"resign", "b/leader", st.electTok}, {"observe", "b/leader", "_"},
	} {
		got := a.do(req[0], req[1], req[2])
		led.expect(fmt.Sprintf("%s line %s %s %q", where, req[0], req[1], req[2]), got == "error_denied", got)
	}
	got := a.do("stats", "_", "_")
	led.expect(where+" line stats (no b/ key, a/mine shown)",
		strings.HasPrefix(got, "ok ") && !strings.Contains(got, `"b/`) && !strings.Contains(got, `"b.`) &&
			strings.Contains(got, `"a/mine"`), got)
}

// attackGodistlock is A's every godistlock command on B's lock: each
// must be NO.
func attackGodistlock(t *testing.T, led *isoLedger, where string, gd *isoConn, st *bState) {
	t.Helper()
	for i, line := range []string{
		"TRY b/lock 1000", "ON b/lock 1000", fmt.Sprintf("REFRESH b/lock %d 1000", st.fence), "OFF b/lock", "IS b/lock",
	} {
		nonce := fmt.Sprint("n", i)
		_ = gd.c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(gd.c, line+" "+nonce+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := gd.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("godistlock %s: %v", line, err)
		}
		got = strings.TrimSuffix(got, "\n")
		led.expect(where+" godistlock "+line, got == "NO "+nonce, got)
	}
	// STATS counts what A may observe: its one lock (a/mine), none of
	// B's, and its own two connections (line and godistlock).
	_ = gd.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(gd.c, "STATS ns\n"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for {
		l, err := gd.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("godistlock STATS: %v after %q", err, lines)
		}
		if l = strings.TrimSuffix(l, "\n"); l == "STATSEND ns" {
			break
		}
		lines = append(lines, l)
	}
	got := strings.Join(lines, "; ")
	led.expect(where+" godistlock STATS (team-a's own counts)",
		got == "STATS ns connections 2; STATS ns locks 1; STATS ns waiters 0; STATS ns keys 1", got)
}

// attackHTTP is A's every HTTP route on B's keys, B's session, and the
// observatory's lists and stream.
func attackHTTP(t *testing.T, led *isoLedger, where string, ah *isoHTTP, st *bState, adminToken string, leads bool) {
	t.Helper()
	esc := url.PathEscape
	body := map[string]any{"acquire_timeout_s": 0, "timeout_s": 1, "lease_ttl_s": 10, "limit": 1}
	tokBody := func(tok string) map[string]any { return map[string]any{"token": tok, "lease_ttl_s": 10} }
	// A's own session, on which A calls B's keys (a follower answers
	// not_leader: the calls then go without one, and are refused
	// before the session is looked up).
	sid := ""
	if code, b := ah.call("POST", "/v1/sessions", "", nil); code == 200 {
		var s struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal([]byte(b), &s)
		sid = s.SessionID
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/locks/" + esc("b/lock"), body},
		{"POST", "/v1/locks/" + esc("b/lock") + "/release", tokBody(st.lockTok)},
		{"POST", "/v1/locks/" + esc("b/lock") + "/renew", tokBody(st.lockTok)},
		{"POST", "/v1/locks/" + esc("b/lock") + "/enqueue", body},
		{"POST", "/v1/locks/" + esc("b/lock") + "/wait", body},
		{"POST", "/v1/locks/" + esc("b/http"), body},
		{"POST", "/v1/semaphores/" + esc("b/sem"), body},
		{"POST", "/v1/semaphores/" + esc("b/sem") + "/release", tokBody(st.semTok)},
		{"POST", "/v1/semaphores/" + esc("b/sem") + "/renew", tokBody(st.semTok)},
		{"POST", "/v1/semaphores/" + esc("b/sem") + "/enqueue", body},
		{"POST", "/v1/semaphores/" + esc("b/sem") + "/wait", body},
		{"POST", "/v1/signals/" + esc("b/chan"), map[string]string{"payload": "evil"}},
		{"POST", "/v1/signals/" + esc("b.chan"), map[string]string{"payload": "evil"}},
		{"GET", "/v1/signals?pattern=" + url.QueryEscape("b.>"), nil},
		{"GET", "/v1/signals?pattern=" + url.QueryEscape(">"), nil},
		{"GET", "/v1/signals?pattern=" + url.QueryEscape("b/chan"), nil},
		{"GET", "/v1/signals?pattern=" + url.QueryEscape("*"), nil}, // "*" is one token: b/chan too
		{"GET", "/v1/keys/" + esc("b/lock"), nil},
		{"GET", "/v1/keys/" + esc("b/sem"), nil},
		{"GET", "/v1/keys/" + esc("b/rw"), nil},
		{"GET", "/v1/keys/" + esc("b/leader"), nil},
		{"GET", "/v1/keys/" + esc("b/count"), nil},
		{"GET", "/v1/keys/" + esc("b/kv"), nil},
		{"GET", "/v1/keys/" + esc("b/list"), nil},
		{"GET", "/v1/keys/" + esc("b/http"), nil},
	} {
		code, got := ah.call(c.method, c.path, sid, c.body)
		led.expect(fmt.Sprintf("%s HTTP %s %s", where, c.method, c.path), forbidden(code, got), fmt.Sprint(code, " ", got))
	}
	// The force release, even by a caller that has the admin token: the
	// policy refuses it first.
	for _, q := range []string{"", "?kind=semaphore"} {
		key := "b/lock"
		if q != "" {
			key = "b/sem"
		}
		path := "/v1/admin/locks/" + esc(key) + "/release" + q
		code, got := ah.call("POST", path, "", nil, "X-Dflockd-Admin", adminToken)
		led.expect(fmt.Sprintf("%s HTTP POST %s (with the admin token)", where, path), forbidden(code, got), fmt.Sprint(code, " ", got))
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/admin/voters"}, {"DELETE", "/v1/admin/voters/n3"},
	} {
		code, got := ah.call(c.method, c.path, "", map[string]string{"node_id": "n9", "raft_addr": "127.0.0.1:1", "client_addr": "127.0.0.1:2"},
			"X-Dflockd-Admin", adminToken)
		led.expect(fmt.Sprintf("%s HTTP %s %s (with the admin token)", where, c.method, c.path), forbidden(code, got), fmt.Sprint(code, " ", got))
	}
	// B's HTTP session is B's: another identity's use of its id is 410,
	// as an unknown id's.
	for _, c := range []struct{ method, path, sid string }{
		{"POST", "/v1/sessions/" + st.httpSession + "/ping", ""},
		{"DELETE", "/v1/sessions/" + st.httpSession, ""},
		{"POST", "/v1/locks/" + esc("a/via-b-session"), st.httpSession},
		{"POST", "/v1/locks/" + esc("b/http") + "/release", st.httpSession},
	} {
		code, got := ah.call(c.method, c.path, c.sid, map[string]any{"acquire_timeout_s": 0})
		// On a follower every call naming a session is 503 not_leader
		// (sessions are the leader's), unless the policy refuses it
		// first: nothing is done there either.
		ok := code == 410 && strings.Contains(got, `"session_gone"`)
		if strings.HasPrefix(c.path, "/v1/locks/"+esc("b/")) {
			ok = forbidden(code, got)
		} else if !leads {
			ok = code == 503 && strings.Contains(got, `"not_leader"`)
		}
		led.expect(fmt.Sprintf("%s HTTP %s %s with team-b's session", where, c.method, c.path), ok, fmt.Sprint(code, " ", got))
	}
	// The observatory's lists and stats: A's own key, none of B's. The
	// server-wide routes (the refusal log, the policy's check of another
	// identity, the metrics, the membership) are not A's: A's admin and
	// metrics classes are on its own keys only.
	for _, path := range []string{
		"/v1/keys", "/v1/keys?prefix=" + url.QueryEscape("b/"), "/v1/keys?kind=lock,semaphore,rwlock,counter,kv,list,barrier",
		"/v1/stats", "/v1/deadlocks", "/v1/hotkeys?limit=100",
		"/v1/events", "/v1/events?prefix=" + url.QueryEscape("b/"), "/v1/events?prefix=" + url.QueryEscape("a/"),
		"/v1/acl/log", "/v1/acl/check?identity=team-b&command=l&key=" + url.QueryEscape("b/lock"), "/metrics",
	} {
		code, got := ah.call("GET", path, "", nil)
		seesB := strings.Contains(got, "team-b")
		if !strings.HasPrefix(path, "/v1/acl/log") { // A's own refusals name B's keys
			// A key or channel of B's starts a JSON string. Unquoted,
			// "b." also ends an event id now and then (its epoch is in
			// base 36), which is not B's.
			seesB = seesB || strings.Contains(got, `"b/`) || strings.Contains(got, `"b.`)
		}
		ok := code == 200 && !seesB || forbidden(code, got)
		if strings.HasPrefix(path, "/v1/events") && code == 404 && strings.Contains(got, "records no lock events") {
			ok = true // a cluster member's replicas record none: nothing to leak
		}
		if ok && code == 200 && (path == "/v1/keys" || path == "/v1/stats" || path == "/v1/events") && !strings.Contains(got, `"a/mine"`) {
			t.Errorf("%s %s does not show team-a's own a/mine: %s", where, path, got)
		}
		led.expect(fmt.Sprintf("%s HTTP GET %s (none of team-b's keys or holders)", where, path), ok, fmt.Sprint(code, " ", got))
	}
	if sid != "" {
		ah.call("DELETE", "/v1/sessions/"+sid, "", nil)
	}
}

// checkB checks, as ops and as B, that B's state is as setUpB left it.
func checkB(t *testing.T, where string, ops *isoHTTP, b *isoConn, st *bState) {
	t.Helper()
	code, body := ops.call("GET", "/v1/keys?prefix="+url.QueryEscape("b/"), "", nil)
	var page struct {
		Keys []struct {
			Key     string `json:"key"`
			Kind    string `json:"kind"`
			Holders []struct {
				Fence  string `json:"fence"`
				Writer bool   `json:"writer"`
				Elect  bool   `json:"elect"`
				Client struct {
					Identity string `json:"identity"`
				} `json:"client"`
			} `json:"holders"`
			Value    *int64 `json:"value"`
			ValueLen *int   `json:"value_len"`
			Len      *int   `json:"len"`
		} `json:"keys"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil {
		t.Fatalf("%s: ops GET /v1/keys?prefix=b/: %d %s", where, code, body)
	}
	seen := map[string]string{}
	for _, k := range page.Keys {
		var desc string
		switch {
		case k.Value != nil:
			desc = fmt.Sprint("value ", *k.Value)
		case k.ValueLen != nil:
			desc = fmt.Sprint("value_len ", *k.ValueLen)
		case k.Len != nil:
			desc = fmt.Sprint("len ", *k.Len)
		default:
			var hs []string
			for _, h := range k.Holders {
				hs = append(hs, h.Client.Identity)
			}
			desc = fmt.Sprint("held by ", strings.Join(hs, ","))
			if k.Key == "b/lock" && (len(k.Holders) != 1 || k.Holders[0].Fence != strconv.FormatUint(st.fence, 10)) {
				t.Errorf("%s: b/lock's fence changed: %+v, want %d", where, k.Holders, st.fence)
			}
		}
		seen[k.Kind+" "+k.Key] = desc
	}
	for key, want := range map[string]string{
		"lock b/lock": "held by team-b", "semaphore b/sem": "held by team-b", "rwlock b/rw": "held by team-b",
		"lock b/leader": "held by team-b", "lock b/http": "held by team-b",
		"counter b/count": "value 5", "kv b/kv": "value_len 5", "list b/list": "len 2",
	} {
		if seen[key] != want {
			t.Errorf("%s: ops sees %s %q, want %q (all: %v)", where, key, seen[key], want, seen)
		}
	}
	// B itself: the values, and nothing pushed to its subscriptions (a
	// push would come before the reply).
	for _, req := range [][4]string{
		{"get", "b/count", "_", "ok 5"}, {"kget", "b/kv", "_", "ok hello"}, {"lrange", "b/list", "0 -1", `ok ["one","two"]`},
		{"n", "b/lock", st.lockTok + " 300", "ok 300"}, {"ping", "_", "_", "ok"},
	} {
		if got := b.do(req[0], req[1], req[2]); got != req[3] {
			t.Errorf("%s: team-b %s %s: %q, want %q", where, req[0], req[1], got, req[3])
		}
	}
	t.Logf("%s: team-b's state intact as ops and team-b see it: %v, fence %d", where, seen, st.fence)
}

// TestIsolationSingleNode: one server process with TLS, client
// certificates, the HTTP API (its observatory recording events) and
// godistlock; team-a over every transport on team-b's keys.
func TestIsolationSingleNode(t *testing.T) {
	ca := certtest.NewCA(t, "dflockd test CA")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "clients.pem")
	certtest.WriteFile(t, caFile, ca.PEM())
	file := filepath.Join(dir, "policy")
	writeIsolationPolicy(t, file, isolationPolicy)
	_, gdPort, _ := net.SplitHostPort(freeAddr(t))
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	const adminToken = "admin-token-of-the-operators-0123456789"
	p := startTLSProcCA(t, ca, "--tls-client-ca", caFile, "--policy-file", file, "--godistlock-port", gdPort,
		"--http-port", httpPort, "--observatory-events", "4096", "--admin-token", adminToken)
	cfg := certtest.ClientConfig(ca.Pool)
	base := "https://" + httpAddr

	b := dialIso(t, p.addr, cfg, "tok-b")
	bh := newIsoHTTP(t, base, "tok-b", cfg)
	st := setUpB(t, b, bh)
	a := dialIso(t, p.addr, cfg, "tok-a")
	a.grant("l", "a/mine", "0 300")
	ah := newIsoHTTP(t, base, "tok-a", cfg)
	ops := newIsoHTTP(t, base, "tok-ops", cfg)
	certA := ca.ClientLeaf(t, "team-a.clients")
	gcfg := certtest.ClientConfig(ca.Pool)
	gcfg.Certificates = []tls.Certificate{certA.TLS}
	gd := dialIso(t, "127.0.0.1:"+gdPort, gcfg, "")

	led := &isoLedger{t: t}
	attackLine(t, led, "single", a, st)
	attackGodistlock(t, led, "single", gd, st)
	attackHTTP(t, led, "single", ah, st, adminToken, true)
	// A's line connection is still open, and A's own key still works.
	if got := a.do("incr", "a/n", "1"); got != "ok 1" {
		t.Fatalf("team-a's own counter after the attempts: %q", got)
	}
	checkB(t, "single", ops, b, st)
	led.summary()
}

// TestIsolationCluster: three member processes with the same policy
// file; team-a's attempts on the leader and on a follower are refused
// where they arrive (error_denied, 403: a follower refuses a denied
// request, it does not redirect it), B's state survives; then a changed
// policy, SIGHUP to each member, is enforced by every member within 1 s
// of the last SIGHUP, on connections opened before it.
//
// Two runs: plain TCP, whose clients members serve on the gnet loops; and
// TLS with client certificates (--tls-client-ca), whose clients netconn
// serves, with a godistlock listener on every member.
func TestIsolationCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, seconds")
	}
	t.Run("tcp", func(t *testing.T) { testIsolationCluster(t, false) })
	t.Run("tls", func(t *testing.T) { testIsolationCluster(t, true) })
}

// isoNet is how the clients of a test reach the servers.
type isoNet struct {
	t      *testing.T
	cfg    *tls.Config // nil: plain TCP and HTTP
	scheme string
}

func (n *isoNet) line(m *httpMember, token string) *isoConn {
	return dialIso(n.t, m.client, n.cfg, token)
}
func (n *isoNet) web(m *httpMember, token string) *isoHTTP {
	return newIsoHTTP(n.t, n.scheme+m.http, token, n.cfg)
}

func testIsolationCluster(t *testing.T, withTLS bool) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy")
	writeIsolationPolicy(t, file, isolationPolicy)
	const adminToken = "admin-token-of-the-operators-0123456789"
	extra := []string{"--policy-file", file, "--observatory-events", "4096", "--admin-token", adminToken, "--orphan-ttl", "60"}
	nw := &isoNet{t: t, scheme: "http://"}
	var gdCfg *tls.Config
	if withTLS {
		ca := certtest.NewCA(t, "dflockd test CA")
		caFile := filepath.Join(dir, "clients.pem")
		certtest.WriteFile(t, caFile, ca.PEM())
		certFile, keyFile := ca.Leaf(t, "member").Write(t, dir)
		extra = append(extra, "--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", caFile)
		nw.cfg, nw.scheme = certtest.ClientConfig(ca.Pool), "https://"
		gdCfg = certtest.ClientConfig(ca.Pool)
		gdCfg.Certificates = []tls.Certificate{ca.ClientLeaf(t, "team-a.clients").TLS}
	}
	ms, gdOf := startIsolationMembers(t, withTLS, extra...)
	opsOf := map[*httpMember]*isoHTTP{}
	for _, m := range ms {
		opsOf[m] = nw.web(m, "tok-ops")
	}
	var l *httpMember
	within(t, 20*time.Second, "a leader answering /v1/readindex", func() (bool, string) {
		for _, m := range ms {
			if code, _ := opsOf[m].call("GET", "/v1/readindex", "", nil); code == 200 {
				l = m
				return true, ""
			}
		}
		return false, "none"
	})
	var followers []*httpMember
	for _, m := range ms {
		if m != l {
			followers = append(followers, m)
		}
	}
	t.Logf("leader %s, followers %s %s", l.id, followers[0].id, followers[1].id)

	b := nw.line(l, "tok-b")
	st := setUpB(t, b, nw.web(l, "tok-b"))
	aL := nw.line(l, "tok-a")
	aL.grant("l", "a/mine", "0 300")
	// The followers' replicas have B's state and A's key before A tries
	// them there.
	for _, f := range followers {
		within(t, 10*time.Second, f.id+" has applied B's state", func() (bool, string) {
			_, got := opsOf[f].call("GET", "/v1/keys", "", nil)
			return strings.Contains(got, `"a/mine"`) && strings.Contains(got, `"b/http"`), got
		})
	}

	led := &isoLedger{t: t}
	attackLine(t, led, l.id+"(leader)", aL, st)
	if withTLS {
		attackGodistlock(t, led, l.id+"(leader)", dialIso(t, gdOf[l], gdCfg, ""), st)
	}
	attackHTTP(t, led, l.id+"(leader)", nw.web(l, "tok-a"), st, adminToken, true)
	for _, f := range followers {
		aF := nw.line(f, "tok-a")
		// A follower that A may write through redirects it: the
		// refusals below are the policy's, not a redirect's.
		if got := aF.do("incr", "a/n", "1"); !strings.HasPrefix(got, "error_not_leader") {
			t.Fatalf("team-a's own incr on follower %s: %q, want error_not_leader", f.id, got)
		}
		attackLine(t, led, f.id+"(follower)", aF, st)
		if withTLS {
			// A follower refuses a denied godistlock request (NO) before
			// it would answer ERR not_leader and close.
			attackGodistlock(t, led, f.id+"(follower)", dialIso(t, gdOf[f], gdCfg, ""), st)
		}
		attackHTTP(t, led, f.id+"(follower)", nw.web(f, "tok-a"), st, adminToken, false)
	}
	attackStableRef(t, led, nw, l)
	checkB(t, "cluster", opsOf[l], b, st)
	led.summary()

	// A new rule, SIGHUP to each member: every member enforces it within
	// 1 s of the last SIGHUP, on A's connections opened before.
	conns := map[*httpMember]*isoConn{l: aL}
	for _, f := range followers {
		conns[f] = nw.line(f, "tok-a")
	}
	for _, m := range ms {
		got := conns[m].do("l", "a/frozen", "0 1")
		if m == l && !strings.HasPrefix(got, "ok ") || m != l && !strings.HasPrefix(got, "error_not_leader") {
			t.Fatalf("before the reload, team-a l a/frozen on %s: %q", m.id, got)
		}
	}
	writeIsolationPolicy(t, file, strings.Replace(isolationPolicy, "  allow * a/*\n", "  allow * a/*\n  deny lock a/frozen\n", 1))
	for _, m := range ms {
		m.signal(syscall.SIGHUP)
	}
	lastHUP := time.Now()
	pending := map[*httpMember]bool{}
	for _, m := range ms {
		pending[m] = true
	}
	var last map[string]string
	for len(pending) > 0 && time.Since(lastHUP) < time.Second {
		last = map[string]string{}
		for m := range pending {
			// A lock of a/frozen granted meanwhile (the leader, before
			// its reload) is held by this connection: a try-lock then
			// answers timeout, not a grant.
			got := conns[m].do("l", "a/frozen", "0 1")
			if got == "error_denied" {
				delete(pending, m)
				t.Logf("%s enforces the new rule %v after the last SIGHUP", m.id, time.Since(lastHUP).Round(time.Millisecond))
			}
			last[m.id] = got
		}
		if len(pending) > 0 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("the new rule is not enforced on every member within 1 s of the last SIGHUP: %v", last)
	}
	t.Logf("the new rule enforced on all 3 members %v after the last SIGHUP (bound 1 s)", time.Since(lastHUP).Round(time.Millisecond))
	versions := map[string]string{}
	for _, m := range ms {
		_, got := opsOf[m].call("GET", "/v1/acl/whoami", "", nil)
		var w struct {
			PolicyVersion string `json:"policy_version"`
		}
		_ = json.Unmarshal([]byte(got), &w)
		versions[m.id] = w.PolicyVersion
	}
	if versions["n1"] == "" || versions["n1"] != versions["n2"] || versions["n2"] != versions["n3"] {
		t.Fatalf("policy versions after the reload: %v", versions)
	}
	t.Logf("policy version on every member: %v", versions)
	if got := b.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("team-b's connection after the reloads: %q", got)
	}
}

// attackStableRef: B's connection with a stable ref leaves its lock
// behind as an orphan (--orphan-ttl) when it closes; A presents the same
// ref, which must not give it B's claims: B, coming back with its ref,
// takes its lock over (the same token), and A's leaving releases nothing.
func attackStableRef(t *testing.T, led *isoLedger, nw *isoNet, l *httpMember) {
	t.Helper()
	b1 := nw.line(l, "tok-b")
	if got := b1.do("stable-ref", "_", "b-worker-7"); got != "ok" {
		t.Fatalf("team-b stable-ref: %q", got)
	}
	tok := b1.grant("l", "b/orphan", "0 300")
	ops := nw.web(l, "tok-ops")
	applied := func() uint64 {
		_, got := ops.call("GET", "/v1/stats", "", nil)
		var st struct {
			Cluster struct {
				AppliedIndex uint64 `json:"applied_index"`
			} `json:"cluster"`
		}
		if err := json.Unmarshal([]byte(got), &st); err != nil {
			t.Fatalf("ops /v1/stats: %v: %s", err, got)
		}
		return st.Cluster.AppliedIndex
	}
	before := applied()
	b1.c.Close()
	a := nw.line(l, "tok-a")
	// Wait until B's close is applied (the only entry proposed
	// meanwhile): A's ref must find the orphan there.
	within(t, 10*time.Second, "team-b's close applied", func() (bool, string) {
		n := applied()
		return n > before, fmt.Sprint("applied index ", n, ", ", before, " before the close")
	})
	got := a.do("stable-ref", "_", "b-worker-7")
	t.Logf("team-a stable-ref b-worker-7 (team-b's ref): %s", got)
	after := a.do("l", "b/orphan", "0 300")
	b2 := nw.line(l, "tok-b")
	if got := b2.do("stable-ref", "_", "b-worker-7"); got != "ok" {
		t.Fatalf("team-b stable-ref again: %q", got)
	}
	back := b2.do("l", "b/orphan", "0 300")
	led.expect("line stable-ref b-worker-7 (team-b's orphan) then l b/orphan", after == "error_denied" &&
		strings.HasPrefix(back, "ok "+tok+" "), fmt.Sprintf("team-a's l: %s; team-b's own l on its return: %s (held token %s)", after, back, tok))
	// The observatory names the holder by the connection that took the
	// orphan over: its identity is team-b's.
	if code, got := ops.call("GET", "/v1/keys/"+url.PathEscape("b/orphan"), "", nil); code != 200 ||
		!strings.Contains(got, `"identity":"team-b"`) {
		t.Errorf("ops GET /v1/keys/b%%2Forphan after team-b's takeover: %d %s, want the holder's identity team-b", code, got)
	}

	// The same over HTTP: a session's stable_ref.
	bh, ah := nw.web(l, "tok-b"), nw.web(l, "tok-a")
	open := func(h *isoHTTP) string {
		code, got := h.call("POST", "/v1/sessions", "", map[string]string{"stable_ref": "b-web-1"})
		var s struct {
			SessionID string `json:"session_id"`
		}
		if code != 200 || json.Unmarshal([]byte(got), &s) != nil {
			t.Fatalf("POST /v1/sessions with a stable_ref: %d %s", code, got)
		}
		return s.SessionID
	}
	lockWeb := func(h *isoHTTP, sid string) (int, string) {
		return h.call("POST", "/v1/locks/"+url.PathEscape("b/web"), sid, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 300})
	}
	sb := open(bh)
	code, got := lockWeb(bh, sb)
	var g struct{ Token string }
	if code != 200 || json.Unmarshal([]byte(got), &g) != nil || g.Token == "" {
		t.Fatalf("team-b's HTTP lock b/web: %d %s", code, got)
	}
	before = applied()
	if code, got := bh.call("DELETE", "/v1/sessions/"+sb, "", nil); code != 204 {
		t.Fatalf("team-b's DELETE of its session: %d %s", code, got)
	}
	within(t, 10*time.Second, "team-b's session close applied", func() (bool, string) {
		n := applied()
		return n > before, fmt.Sprint("applied index ", n, ", ", before, " before the close")
	})
	sa := open(ah)
	aCode, aGot := lockWeb(ah, sa)
	sb2 := open(bh)
	code, got = lockWeb(bh, sb2)
	led.expect("HTTP POST /v1/sessions {stable_ref: team-b's} then POST /v1/locks/b%2Fweb",
		forbidden(aCode, aGot) && code == 200 && strings.Contains(got, `"token":"`+g.Token+`"`),
		fmt.Sprintf("team-a's lock call: %d %s; team-b's own on its return: %d %s (held token %s)", aCode, aGot, code, got, g.Token))
}

// startIsolationMembers runs a 3-member cluster, every member with an
// HTTP API, the extra flags and, withGodistlock, a godistlock listener
// of its own; it returns the members and their godistlock addresses.
func startIsolationMembers(t *testing.T, withGodistlock bool, extra ...string) ([]*httpMember, map[*httpMember]string) {
	t.Helper()
	var ms []*httpMember
	var peers []string
	gdOf := map[*httpMember]string{}
	for i := range 3 {
		m := &httpMember{member: &member{t: t, id: fmt.Sprint("n", i+1), client: freeAddr(t)}, http: freeAddr(t)}
		raft := freeAddr(t)
		peers = append(peers, fmt.Sprintf("%s=%s@%s", m.id, raft, m.client))
		m.args = []string{"--raft-addr", raft, "--cluster-bootstrap"}
		if withGodistlock {
			gdOf[m] = freeAddr(t)
			_, port, _ := net.SplitHostPort(gdOf[m])
			m.args = append(m.args, "--godistlock-port", port)
		}
		ms = append(ms, m)
	}
	dir := t.TempDir()
	for _, m := range ms {
		m.args = append(memberArgs(m, dir, strings.Join(peers, ",")), append(m.args, extra...)...)
		m.start()
	}
	return ms, gdOf
}
