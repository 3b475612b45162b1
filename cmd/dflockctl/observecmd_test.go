package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/httpapi"
	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/policy"
	sessions "github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// observedServer is an in-process server's HTTP API with the observatory
// on and an admin token; calls makes lock calls on it.
type observedServer struct {
	t     *testing.T
	addr  string
	hub   *sessions.Hub
	token string // the bearer token of its calls ("": none)
}

// as is the server called with a bearer token: with a policy, the
// sessions it opens are the token's identity's.
func (s *observedServer) as(token string) *observedServer {
	c := *s
	c.token = token
	return &c
}

func startObserved(t *testing.T) *observedServer {
	t.Helper()
	return startServerAPI(t, sessions.Config{}, httpapi.Config{AdminToken: "root"})
}

// startServerAPI starts an in-process server's HTTP API with the given
// configurations (a policy, tokens).
func startServerAPI(t *testing.T, sc sessions.Config, hc httpapi.Config) *observedServer {
	t.Helper()
	hub := sessions.NewServerHub(sc, engine.Config{Shards: 4, Events: 1024}, timerwheel.NewMonoClock(), time.Hour)
	hub.Start()
	api := httpapi.New(hub, hc)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go api.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		api.Shutdown(ctx)
		hub.Stop()
	})
	return &observedServer{t: t, addr: l.Addr().String(), hub: hub}
}

// post makes an HTTP API call and returns its status and body.
func (s *observedServer) post(path, sid string, body any) (int, []byte) {
	return s.call(http.MethodPost, path, sid, body)
}

// call makes an HTTP API call with any method.
func (s *observedServer) call(method, path, sid string, body any) (int, []byte) {
	var rd io.Reader = http.NoBody
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+s.addr+path, rd)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if sid != "" {
		req.Header.Set("X-Dflockd-Session", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

func (s *observedServer) session() string {
	_, b := s.post("/v1/sessions", "", nil)
	var r struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal(b, &r)
	return r.SessionID
}

func (s *observedServer) lock(sid, key string, timeout int) int {
	code, _ := s.post("/v1/locks/"+key, sid, map[string]int{"acquire_timeout_s": timeout})
	return code
}

func (s *observedServer) waiters(key string) int {
	for _, l := range s.hub.Engine().LockStats(s.hub.Clock().Now(), 0).Locks {
		if l.Key == key {
			return l.Waiters
		}
	}
	return 0
}

// locks and deadlocks print what the observatory sees; admin release
// takes a key from its holder with the admin token.
func TestObservatoryCommands(t *testing.T) {
	t.Parallel()
	srv := startObserved(t)
	at := "--http=" + srv.addr
	a, b := srv.session(), srv.session()
	if srv.lock(a, "jobs%2Fx", 0) != 200 || srv.lock(b, "jobs%2Fy", 0) != 200 {
		t.Fatal("locks not granted")
	}
	r := run(t, nil, "locks", "jobs/", at)
	expectCode(t, r, exitOK, "locks")
	if !strings.Contains(r.stdout, "jobs/x") || !strings.Contains(r.stdout, "jobs/y") || !strings.Contains(r.stdout, "http 127.0.0.1") {
		t.Fatalf("locks:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`^KEY +KIND +HELD BY +LEASE LEFT +FENCE +QUEUE\n`).MatchString(r.stdout) {
		t.Fatalf("locks without a policy: want no IDENTITY column:\n%s", r.stdout)
	}
	r = run(t, nil, "locks", "jobs/x", at, "--json")
	expectCode(t, r, exitOK, "locks --json")
	var doc struct {
		Keys []struct {
			Key string `json:"key"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Keys) != 1 || doc.Keys[0].Key != "jobs/x" {
		t.Fatalf("locks --json: %v %s", err, r.stdout)
	}
	expectCode(t, run(t, nil, "deadlocks", at), exitOK, "deadlocks, none")

	// a waits for y, b for x: a deadlock, until an operator breaks it.
	waits := make(chan int, 2)
	go func() { waits <- srv.lock(a, "jobs%2Fy", 60) }()
	go func() { waits <- srv.lock(b, "jobs%2Fx", 60) }()
	testserver.Eventually(t, "both waiting", func() bool { return srv.waiters("jobs/x") == 1 && srv.waiters("jobs/y") == 1 })
	var dl result
	testserver.Eventually(t, "the deadlock reported", func() bool {
		dl = run(t, nil, "deadlocks", at)
		return dl.code == exitDeadlocks
	})
	if !strings.Contains(dl.stdout, `waits for lock "jobs/x"`) || !strings.Contains(dl.stdout, `waits for lock "jobs/y"`) || strings.Contains(dl.stdout, " as ") {
		t.Fatalf("deadlocks:\n%s", dl.stdout)
	}
	if r := run(t, nil, "top", at, "--json"); r.code != exitOK || !strings.Contains(r.stdout, `"sessions":[{`) || strings.Contains(r.stdout, "identity") {
		t.Fatalf("top --json without a policy: want its deadlock's sessions, no identity: exit %d\n%s", r.code, r.stdout)
	}
	expectCode(t, run(t, nil, "admin", "release", "jobs/x", at, "--admin-token", "wrong"), exitNoPerm, "a wrong admin token")
	r = run(t, nil, "admin", "release", "jobs/x", at, "--admin-token", "root", "--reason", "deadlock")
	expectCode(t, r, exitOK, "admin release")
	if !strings.Contains(r.stdout, "1 holder(s) released") {
		t.Fatalf("admin release: %s", r.stdout)
	}
	select {
	case code := <-waits: // b gets x
		if code != 200 {
			t.Fatalf("b's wait: %d", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nobody got a key after the force release")
	}
}

// --http is a global option, before the command's name as after it; and
// deadlocks tells "found" (5, its own status) from "could not ask"
// (issue #34).
func TestObservatoryCommandStatuses(t *testing.T) {
	t.Parallel()
	const found = 5 // README.md's exit codes: deadlocks found
	srv := startObserved(t)
	a, b := srv.session(), srv.session()
	if srv.lock(a, "p", 0) != 200 || srv.lock(b, "q", 0) != 200 {
		t.Fatal("locks not granted")
	}
	for _, args := range [][]string{{"--http", srv.addr, "locks"}, {"--http", srv.addr, "deadlocks"}, {"--http=" + srv.addr, "top", "--json"}} {
		if r := run(t, nil, args...); r.code != exitOK || (args[2] == "locks" && !strings.Contains(r.stdout, "#")) {
			t.Errorf("%q: exit %d, want 0; stdout %q, stderr %q", args, r.code, r.stdout, r.stderr)
		}
	}

	waits := make(chan int, 2)
	go func() { waits <- srv.lock(a, "q", 60) }()
	go func() { waits <- srv.lock(b, "p", 60) }()
	testserver.Eventually(t, "both waiting", func() bool { return srv.waiters("p") == 1 && srv.waiters("q") == 1 })
	var dl result
	testserver.Eventually(t, "the deadlock reported", func() bool {
		dl = run(t, nil, "deadlocks", "--http", srv.addr)
		return dl.code != exitOK
	})
	if dl.code != found || !strings.Contains(dl.stdout, "deadlock 1") {
		t.Errorf("deadlocks found: exit %d, want %d; stdout %q, stderr %q", dl.code, found, dl.stdout, dl.stderr)
	}
	// Failing to ask is not "found": no HTTP API there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if r := run(t, nil, "--http", closed, "deadlocks"); r.code == found || r.code == exitOK {
		t.Errorf("deadlocks with nothing at %s: exit %d, want a failure other than %d", closed, r.code, found)
	}
	// Both keys taken from their holders: each wait ends with a grant.
	for _, k := range []string{"p", "q"} {
		expectCode(t, run(t, nil, "admin", "release", k, "--http", srv.addr, "--admin-token", "root"), exitOK, "admin release "+k)
	}
	for range 2 {
		select {
		case <-waits:
		case <-time.After(20 * time.Second):
			t.Fatal("the waits did not end after the force release")
		}
	}
}

// startIdentityServer is an in-process server's HTTP API with a policy
// of one identity, team-a (token tok-a), that may do everything to its
// keys a.*.
func startIdentityServer(t *testing.T) *observedServer {
	t.Helper()
	p, err := policy.Parse([]byte("identity team-a\n token " + policy.TokenHash("tok-a") + "\n allow * a.*\n"))
	if err != nil {
		t.Fatal(err)
	}
	return startServerAPI(t, sessions.Config{Policy: p}, httpapi.Config{})
}

// endSessions closes the sessions; the waits, their lock calls, return.
func endSessions(t *testing.T, srv *observedServer, waits <-chan int, sids ...string) {
	t.Helper()
	for _, sid := range sids {
		if code, body := srv.call(http.MethodDelete, "/v1/sessions/"+sid, "", nil); code != http.StatusNoContent {
			t.Errorf("closing session %s: %d %s", sid, code, body)
		}
	}
	for range cap(waits) {
		select {
		case <-waits:
		case <-time.After(20 * time.Second):
			t.Fatal("a wait did not end with its session")
		}
	}
}

// With a policy, locks shows each holder's identity in a column of its
// own and each waiter's in the queue, deadlocks each session's
// (issue #35).
func TestObservatoryIdentities(t *testing.T) {
	t.Parallel()
	srv := startIdentityServer(t).as("tok-a")
	at := []string{"--http=" + srv.addr, "--auth-token", "tok-a"}
	a, b := srv.session(), srv.session()
	if srv.lock(a, "a.job", 0) != 200 {
		t.Fatal("lock not granted")
	}
	waits := make(chan int, 3)
	go func() { waits <- srv.lock(b, "a.job", 60) }()
	testserver.Eventually(t, "b waiting", func() bool { return srv.waiters("a.job") == 1 })

	r := run(t, nil, append([]string{"locks"}, at...)...)
	expectCode(t, r, exitOK, "locks")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !regexp.MustCompile(`^KEY +KIND +HELD BY +IDENTITY +LEASE LEFT +FENCE +QUEUE$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^a\.job +lock +#\d+ http 127\.0\.0\.1 +team-a +\S+ +\S+ +1: #\d+ http 127\.0\.0\.1 as team-a( \(\S+\))?$`).MatchString(lines[1]) {
		t.Fatalf("locks: want a header with IDENTITY and a row naming team-a twice:\n%s", r.stdout)
	}
	r = run(t, nil, append([]string{"locks", "--json"}, at...)...)
	expectCode(t, r, exitOK, "locks --json")
	var doc struct {
		Keys []obsKey `json:"keys"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Keys) != 1 || len(doc.Keys[0].Holders) != 1 ||
		doc.Keys[0].Holders[0].Client.Identity != "team-a" || len(doc.Keys[0].Waiters) != 1 || doc.Keys[0].Waiters[0].Client.Identity != "team-a" {
		t.Fatalf("locks --json: %v\n%s", err, r.stdout)
	}

	// c and d each hold a key and wait for the other's.
	c, d := srv.session(), srv.session()
	if srv.lock(c, "a.x", 0) != 200 || srv.lock(d, "a.y", 0) != 200 {
		t.Fatal("locks not granted")
	}
	go func() { waits <- srv.lock(c, "a.y", 60) }()
	go func() { waits <- srv.lock(d, "a.x", 60) }()
	testserver.Eventually(t, "both waiting", func() bool { return srv.waiters("a.x") == 1 && srv.waiters("a.y") == 1 })
	var dl result
	testserver.Eventually(t, "the deadlock reported", func() bool {
		dl = run(t, nil, append([]string{"deadlocks"}, at...)...)
		return dl.code == exitDeadlocks
	})
	for _, key := range []string{"a.x", "a.y"} {
		want := `(?m)^  #\d+ http 127\.0\.0\.1 as team-a waits for lock "` + regexp.QuoteMeta(key) + `", held or queued ahead by #\d+ http 127\.0\.0\.1 as team-a$`
		if !regexp.MustCompile(want).MatchString(dl.stdout) {
			t.Errorf("deadlocks: no line %s in\n%s", want, dl.stdout)
		}
	}
	r = run(t, nil, append([]string{"top"}, at...)...)
	expectCode(t, r, exitOK, "top off a terminal")
	if !regexp.MustCompile(`(?m)^DEADLOCK since \S+: 2 sessions \(team-a\) on "a\.[xy]", "a\.[xy]"$`).MatchString(r.stdout) {
		t.Errorf("top: the deadlock without its identity:\n%s", r.stdout)
	}
	endSessions(t, srv, waits, a, b, c, d)
}
