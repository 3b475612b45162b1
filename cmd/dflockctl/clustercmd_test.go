package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// adminFake is a member's HTTP admin API: a leader (it records the calls
// and answers 200), a follower (503 not_leader naming leader), or a
// member without an admin token.
type adminFake struct {
	mu    sync.Mutex
	calls []adminCall
}

type adminCall struct {
	method, path, admin, auth string
	body                      map[string]string
}

func (f *adminFake) leader(t *testing.T) string {
	return startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		c := adminCall{method: r.Method, path: r.URL.Path, admin: r.Header.Get("X-Dflockd-Admin"), auth: r.Header.Get("Authorization")}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			json.Unmarshal(b, &c.body)
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if c.admin != "s3cret" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"unauthorized"}`+"\n")
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v1/admin/voters/")
		if r.Method == http.MethodPost {
			id = c.body["node_id"]
		}
		io.WriteString(w, `{"status":"ok","node_id":"`+id+`"}`+"\n")
	})
}

func follower(t *testing.T, leaderClient string) string {
	return startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if leaderClient != "" {
			w.Header().Set("X-Dflockd-Leader", leaderClient)
		}
		w.WriteHeader(503)
		io.WriteString(w, `{"error":"not_leader"}`+"\n")
	})
}

func startHTTP(t *testing.T, h http.HandlerFunc) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func TestClusterCommand(t *testing.T) {
	t.Parallel()
	var f adminFake
	leader := f.leader(t)
	list := follower(t, "10.0.0.1:6388") + "," + leader

	r := run(t, []string{"DFLOCKD_ADMIN_TOKEN=s3cret"}, "cluster", "add", "n4", "10.0.0.4:7004", "10.0.0.4:6388",
		"--http", list, "--auth-token", "bearer")
	expectOut(t, r, 0, "n4 added\n", "add through a follower to the leader")
	f.mu.Lock()
	c := f.calls[0]
	f.mu.Unlock()
	if c.method != "POST" || c.path != "/v1/admin/voters" || c.admin != "s3cret" || c.auth != "Bearer bearer" ||
		c.body["node_id"] != "n4" || c.body["raft_addr"] != "10.0.0.4:7004" || c.body["client_addr"] != "10.0.0.4:6388" {
		t.Fatalf("the leader got %+v", c)
	}
	expectOut(t, run(t, nil, "--json", "cluster", "remove", "n4", "--http", leader, "--admin-token", "s3cret"), 0,
		`{"status":"ok","node_id":"n4"}`+"\n", "remove --json")
	// The HTTP address from the environment, the token from a file.
	_, port, _ := net.SplitHostPort(leader)
	file := t.TempDir() + "/admin"
	sh(t, "printf ' s3cret\\n' > "+file)
	expectOut(t, run(t, []string{"DFLOCKD_HTTP_HOST=127.0.0.1", "DFLOCKD_HTTP_PORT=" + port, "DFLOCKD_ADMIN_TOKEN_FILE=" + file},
		"cluster", "remove", "n5"), 0, "n5 removed\n", "address from the environment")

	expectCode(t, run(t, nil, "cluster", "remove", "n4", "--http", leader, "--admin-token", "wrong"), exitNoPerm, "wrong token")
	r = run(t, nil, "cluster", "remove", "n4", "--http", follower(t, "10.0.0.1:6388"), "--admin-token", "x")
	expectCode(t, r, exitUnavailable, "only a follower")
	if !strings.Contains(r.stderr, "10.0.0.1:6388") {
		t.Fatalf("stderr %q does not name the leader", r.stderr)
	}
	disabled := startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		io.WriteString(w, `{"error":"admin_disabled"}`)
	})
	expectCode(t, run(t, nil, "cluster", "remove", "n4", "--http", disabled, "--admin-token", "x"), exitFailure, "admin disabled")
	refused := startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":"bad_request","detail":"node_id may not contain white space"}`)
	})
	expectCode(t, run(t, nil, "cluster", "remove", "n4", "--http", refused, "--admin-token", "x"), exitUsage, "refused values")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	expectCode(t, run(t, nil, "cluster", "remove", "n4", "--http", closed, "--admin-token", "x"), exitUnavailable, "nobody listening")

	for _, args := range [][]string{
		{"cluster"}, {"cluster", "join"}, {"cluster", "add", "n4", "a:1"}, {"cluster", "remove"},
		{"cluster", "remove", "n4", "--http", leader}, // no admin token
		{"cluster", "add", "n4", "a", "b:2", "--http", leader, "--admin-token", "s3cret"},
		{"cluster", "remove", "n4", "--http", "h:0", "--admin-token", "s3cret"},
	} {
		expectCode(t, run(t, nil, args...), exitUsage, strings.Join(args, " "))
	}
	if r := run(t, nil, "cluster", "-h"); r.code != 0 || !strings.Contains(r.stdout, "usage: dflockctl cluster add") {
		t.Fatalf("cluster -h: %d %q", r.code, r.stdout)
	}
}
