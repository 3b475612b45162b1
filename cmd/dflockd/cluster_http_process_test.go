package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The HTTP API and membership administration on cluster member
// processes: followers redirect, the leader takes lock calls through the
// log, and dflockctl adds a fourth member that catches up and removes it.

// httpMember is a cluster member process with --http-port.
type httpMember struct {
	*member
	http string // host:port of its HTTP API
}

// startHTTPMembers runs an n-member cluster, bootstrapped from its peer
// list, each member with an HTTP API of its own and the extra flags.
func startHTTPMembers(t *testing.T, n int, extra ...string) []*httpMember {
	t.Helper()
	var ms []*httpMember
	var peers []string
	for i := range n {
		m := &httpMember{member: &member{t: t, id: fmt.Sprint("n", i+1), client: freeAddr(t)}, http: freeAddr(t)}
		raft := freeAddr(t)
		peers = append(peers, fmt.Sprintf("%s=%s@%s", m.id, raft, m.client))
		m.args = []string{"--raft-addr", raft, "--cluster-bootstrap"}
		ms = append(ms, m)
	}
	dir := t.TempDir()
	for _, m := range ms {
		m.args = append(memberArgs(m, dir, strings.Join(peers, ",")), append(m.args, extra...)...)
		m.start()
	}
	return ms
}

// memberArgs are the flags every member of these tests runs with.
func memberArgs(m *httpMember, dir, peers string) []string {
	_, port, _ := net.SplitHostPort(m.client)
	_, httpPort, _ := net.SplitHostPort(m.http)
	return []string{"--host", "127.0.0.1", "--port", port, "--http-port", httpPort, "--raft-dir", filepath.Join(dir, m.id),
		"--node-id", m.id, "--cluster-peers", peers, "--raft-auth-token", strings.Repeat("k", 40), "--shutdown-timeout", "1"}
}

// httpAnswer is an HTTP answer, read whole.
type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a *httpAnswer) String() string { return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body)) }

// call makes one HTTP request; a transport error is a status of 0.
func (m *httpMember) call(method, path, session string, body any) *httpAnswer {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+m.http+path, rd)
	if err != nil {
		m.t.Fatal(err)
	}
	if session != "" {
		req.Header.Set("X-Dflockd-Session", session)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return &httpAnswer{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &httpAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// clusterStats is the part of /v1/stats these tests read.
type clusterStats struct {
	Locks []struct {
		Key string `json:"key"`
	} `json:"locks"`
	Cluster struct {
		Role         string `json:"role"`
		LeaderAddr   string `json:"leader_addr"`
		CommitIndex  uint64 `json:"commit_index"`
		AppliedIndex uint64 `json:"applied_index"`
		Voters       []struct {
			NodeID     string `json:"node_id"`
			ClientAddr string `json:"client_addr"`
		} `json:"voters"`
	} `json:"cluster"`
}

func (m *httpMember) stats() (clusterStats, bool) {
	var st clusterStats
	a := m.call("GET", "/v1/stats", "", nil)
	return st, a.status == 200 && json.Unmarshal(a.body, &st) == nil
}

// within polls cond until it holds, failing the test after d.
func within(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, d, last)
		}
	}
}

// httpLeader is the member whose GET /v1/readindex answers 200.
func httpLeader(t *testing.T, ms []*httpMember) *httpMember {
	t.Helper()
	var l *httpMember
	within(t, 15*time.Second, "a leader answering /v1/readindex", func() (bool, string) {
		for _, m := range ms {
			if a := m.call("GET", "/v1/readindex", "", nil); a.status == 200 {
				l = m
				return true, ""
			}
		}
		return false, "none"
	})
	return l
}

var ctlBuilt struct {
	once sync.Once
	path string
	err  error
}

// ctlBinary builds dflockctl once per test run.
func ctlBinary(t *testing.T) string {
	t.Helper()
	ctlBuilt.once.Do(func() {
		dir, err := os.MkdirTemp("", "dflockctl-bin")
		if err != nil {
			ctlBuilt.err = err
			return
		}
		ctlBuilt.path = filepath.Join(dir, "dflockctl")
		if out, err := exec.Command("go", "build", "-o", ctlBuilt.path, "../dflockctl").CombinedOutput(); err != nil {
			ctlBuilt.err = fmt.Errorf("go build dflockctl: %v\n%s", err, out)
		}
	})
	if ctlBuilt.err != nil {
		t.Fatal(ctlBuilt.err)
	}
	return ctlBuilt.path
}

// dflockctl runs it with env added to a DFLOCKD_-free environment.
func dflockctl(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(ctlBinary(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DFLOCKD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

func TestClusterHTTPAndMembership(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, seconds")
	}
	const admin = "adm1n-t0ken-for-the-test"
	ms := startHTTPMembers(t, 3, "--admin-token", admin)
	l := httpLeader(t, ms)

	// Followers: 503 not_leader naming the leader's client address. A
	// noisy machine may elect again meanwhile: the leader is asked anew.
	for _, f := range ms {
		if f == l {
			continue
		}
		within(t, 15*time.Second, f.id+" redirecting to the leader", func() (bool, string) {
			a := f.call("POST", "/v1/sessions", "", nil)
			l = httpLeader(t, ms)
			return f == l || (a.status == 503 && strings.Contains(string(a.body), `"not_leader"`) &&
				a.header.Get("X-Dflockd-Leader") == l.client), a.String() + " leader header " + a.header.Get("X-Dflockd-Leader")
		})
	}
	if a := ms[0].call("GET", "/metrics", "", nil); a.status != 200 || !strings.Contains(string(a.body), "dflockd_raft_voters 3") ||
		!strings.Contains(string(a.body), `dflockd_raft_state{state="`) {
		t.Fatalf("/metrics of a member: %d, no dflockd_raft_* metrics:\n%s", a.status, a.body)
	}

	// The leader: a lock over HTTP, the same lock over TCP.
	var sid, token string
	within(t, 15*time.Second, "a lock granted over HTTP", func() (bool, string) {
		l = httpLeader(t, ms)
		a := l.call("POST", "/v1/sessions", "", nil)
		var s struct {
			SessionID string `json:"session_id"`
		}
		if a.status != 200 || json.Unmarshal(a.body, &s) != nil {
			return false, "session: " + a.String()
		}
		sid = s.SessionID
		a = l.call("POST", "/v1/locks/job", sid, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 60})
		var g struct {
			Status, Token string
		}
		if a.status != 200 || json.Unmarshal(a.body, &g) != nil || g.Status != "ok" {
			return false, "lock: " + a.String()
		}
		token = g.Token
		return true, ""
	})
	if got := ask(l.client, "l", "job", "0", 5*time.Second); got != "timeout" {
		t.Fatalf("TCP try-lock of the lock held over HTTP: %q", got)
	}
	if a := l.call("POST", "/v1/locks/job/release", sid, map[string]string{"token": token}); a.status != 204 {
		t.Fatalf("release: %s", a)
	}
	if got := ask(l.client, "l", "job", "0 30", 5*time.Second); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("TCP try-lock after the HTTP release: %q", got)
	}
	if a := l.call("POST", "/v1/locks/kept", sid, map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 120}); a.status != 200 {
		t.Fatalf("lock kept: %s", a)
	}

	// A fourth member: its own peer entry only, no bootstrap.
	n4 := &httpMember{member: &member{t: t, id: "n4", client: freeAddr(t)}, http: freeAddr(t)}
	raft4 := freeAddr(t)
	n4.args = append(memberArgs(n4, t.TempDir(), fmt.Sprintf("n4=%s@%s", raft4, n4.client)), "--raft-addr", raft4)
	n4.start()
	if got := ask(n4.client, "l", "x", "0", 5*time.Second); got != "error_not_leader" {
		t.Fatalf("a member nobody added yet: %q, want a bare error_not_leader", got)
	}
	// Followers first in --http: dflockctl asks each until the leader.
	var list []string
	for _, m := range ms {
		if m != l {
			list = append(list, m.http)
		}
	}
	list = append(list, l.http)
	out, errOut, code := dflockctl(t, []string{"DFLOCKD_ADMIN_TOKEN=" + admin},
		"cluster", "add", "n4", raft4, n4.client, "--http", strings.Join(list, ","))
	if code != 0 || out != "n4 added\n" {
		t.Fatalf("dflockctl cluster add: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	all := append(ms, n4)
	within(t, 20*time.Second, "n4 caught up", func() (bool, string) {
		ls, ok1 := l.stats()
		st, ok2 := n4.stats()
		state := fmt.Sprintf("leader %+v, n4 %+v", ls.Cluster, st.Cluster)
		if !ok1 || !ok2 || len(st.Cluster.Voters) != 4 || st.Cluster.LeaderAddr != l.client ||
			st.Cluster.AppliedIndex < ls.Cluster.CommitIndex {
			return false, state
		}
		for _, lk := range st.Locks {
			if lk.Key == "kept" {
				return true, ""
			}
		}
		return false, state + ": no lock kept"
	})
	if got := ask(n4.client, "l", "x", "0", 5*time.Second); got != "error_not_leader "+l.client {
		t.Fatalf("n4 redirects with %q, want the leader's client address %s", got, l.client)
	}
	if a := n4.call("POST", "/v1/sessions", "", nil); a.status != 503 || a.header.Get("X-Dflockd-Leader") != l.client {
		t.Fatalf("n4's HTTP redirect: %s, X-Dflockd-Leader %q", a, a.header.Get("X-Dflockd-Leader"))
	}
	for _, m := range all {
		st, _ := m.stats()
		for _, v := range st.Cluster.Voters {
			if v.NodeID == "n4" && v.ClientAddr != n4.client {
				t.Fatalf("%s names n4's client address %q", m.id, v.ClientAddr)
			}
		}
	}

	// A wrong token is refused (77); then the member is removed.
	if _, _, code := dflockctl(t, nil, "cluster", "remove", "n4", "--http", l.http, "--admin-token", "wrong"); code != 77 {
		t.Fatalf("dflockctl cluster remove with a wrong token: exit %d, want 77", code)
	}
	out, errOut, code = dflockctl(t, []string{"DFLOCKD_ADMIN_TOKEN=" + admin}, "cluster", "remove", "n4", "--http", strings.Join(list, ","))
	if code != 0 || out != "n4 removed\n" {
		t.Fatalf("dflockctl cluster remove: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	within(t, 10*time.Second, "three voters again", func() (bool, string) {
		st, ok := l.stats()
		return ok && len(st.Cluster.Voters) == 3, fmt.Sprintf("%+v", st.Cluster.Voters)
	})
}
