package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dflockd-ng/dflockd/snapfile"
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

// TestAdminCallsFollowTheLeader: the admin commands that only a leader
// takes (cluster, snapshot save; askLeader) pass over the members that
// answer 503 not_leader, with the leader's client address in
// X-Dflockd-Leader or without it, to the listed member that leads. When no
// listed member leads, the error names the client address a member gave
// (it is not an HTTP address, so it is not asked), or, when none gave
// one, says which member does not lead.
func TestAdminCallsFollowTheLeader(t *testing.T) {
	t.Parallel()
	var snap bytes.Buffer
	if err := snapfile.Write(&snap, &snapfile.Header{ServerVersion: "v", Index: 4, Term: 1}, []byte("state")); err != nil {
		t.Fatal(err)
	}
	var took atomic.Int32 // the calls the leader took
	leader := startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Dflockd-Admin") != "s3cret" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":"unauthorized"}`+"\n")
			return
		}
		took.Add(1)
		if r.URL.Path == "/v1/admin/snapshot" {
			w.Write(snap.Bytes())
			return
		}
		io.WriteString(w, `{"status":"ok","node_id":"n4"}`+"\n")
	})
	named, bare := follower(t, "10.0.0.1:6388"), follower(t, "")
	dir := t.TempDir()
	for _, cmd := range []struct {
		name string
		args []string
		out  string // a line of what it prints when the leader took it
	}{
		{"cluster remove", []string{"cluster", "remove", "n4"}, "n4 removed\n"},
		{"snapshot save", []string{"snapshot", "save", filepath.Join(dir, "s.snap")}, "index       4 (term 1)\n"},
	} {
		ask := func(list string) result {
			return run(t, nil, append(slices.Clone(cmd.args), "--http", list, "--admin-token", "s3cret")...)
		}
		before := took.Load()
		r := ask(bare + "," + named + "," + leader)
		expectCode(t, r, exitOK, cmd.name+" through followers to the leader")
		if !strings.Contains(r.stdout, cmd.out) || took.Load() != before+1 {
			t.Fatalf("%s through followers: stdout %q, want %q; the leader took %d calls, want 1",
				cmd.name, r.stdout, cmd.out, took.Load()-before)
		}

		r = ask(named + "," + bare)
		expectCode(t, r, exitUnavailable, cmd.name+" with only followers, one naming the leader")
		want := "dflockctl: " + cmd.name + ": no leader among " + named + "," + bare +
			"; the leader's client address is 10.0.0.1:6388: give --http its HTTP address\n"
		if r.stderr != want {
			t.Fatalf("%s with only followers: stderr %q, want %q", cmd.name, r.stderr, want)
		}

		r = ask(bare)
		expectCode(t, r, exitUnavailable, cmd.name+" with a follower that does not name the leader")
		if want := "dflockctl: " + cmd.name + ": " + bare + " does not lead\n"; r.stderr != want {
			t.Fatalf("%s without X-Dflockd-Leader: stderr %q, want %q", cmd.name, r.stderr, want)
		}
	}
}
