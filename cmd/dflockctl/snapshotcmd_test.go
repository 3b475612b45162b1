package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/snapfile"
)

// TestSnapshotCommand: save asks each --http address until the leader
// answers, and writes its file whole; a file cut short leaves nothing;
// status verifies a file and prints what it holds.
func TestSnapshotCommand(t *testing.T) {
	t.Parallel()
	var file bytes.Buffer
	h := snapfile.Header{ServerVersion: "v", Index: 9, Term: 2, Digest: "dd", Fence: 77, Keys: 3, LocksHeld: 1,
		Members: []snapfile.Member{{ID: "n1", Address: "127.0.0.1:7001", Suffrage: "Voter"}}}
	if err := snapfile.Write(&file, &h, bytes.Repeat([]byte("s"), 5000)); err != nil {
		t.Fatal(err)
	}
	serve := func(body []byte) string {
		return startHTTP(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/admin/snapshot" || r.Header.Get("X-Dflockd-Admin") != "s3cret" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(401)
				io.WriteString(w, `{"error":"unauthorized"}`+"\n")
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(body)
		})
	}
	leader, cut := serve(file.Bytes()), serve(file.Bytes()[:file.Len()-10])
	dir := t.TempDir()
	out := filepath.Join(dir, "s.snap")
	r := run(t, nil, "snapshot", "save", out, "--http", follower(t, "10.0.0.1:6388")+","+leader, "--admin-token", "s3cret")
	if r.code != 0 || !strings.Contains(r.stdout, "index       9 (term 2)") || !strings.Contains(r.stdout, "locks held  1") {
		t.Fatalf("save: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, file.Bytes()) {
		t.Fatal("the saved file differs from what the leader sent")
	}
	r = run(t, nil, "snapshot", "status", out)
	if r.code != 0 || !strings.Contains(r.stdout, "format      1") || !strings.Contains(r.stdout, "keys        3") ||
		!strings.Contains(r.stdout, "fence       77 ") || !strings.Contains(r.stdout, "fence floor 1099511627853 ") || !strings.Contains(r.stdout, "members     n1=127.0.0.1:7001") {
		t.Fatalf("status: %d %q %q", r.code, r.stdout, r.stderr)
	}
	short := filepath.Join(dir, "short.snap")
	expectCode(t, run(t, nil, "snapshot", "save", short, "--http", cut, "--admin-token", "s3cret"), exitFailure, "a file cut short")
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("a failed save left %d files", len(ents))
	}
	expectCode(t, run(t, nil, "snapshot", "save", short, "--http", leader, "--admin-token", "wrong"), exitNoPerm, "wrong token")
	b := bytes.Clone(file.Bytes())
	b[100] ^= 1
	os.WriteFile(short, b, 0o600)
	r = run(t, nil, "snapshot", "status", short)
	if r.code != exitFailure || !strings.Contains(r.stderr, "damaged") {
		t.Fatalf("status of a damaged file: %d %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"snapshot"}, {"snapshot", "load", "x"}, {"snapshot", "status"}, {"snapshot", "save", "a", "b"}} {
		expectCode(t, run(t, nil, args...), exitUsage, strings.Join(args, " "))
	}
	if r := run(t, nil, "help", "snapshot"); r.code != 0 || !strings.Contains(r.stdout, "usage: dflockctl snapshot save") {
		t.Fatalf("help: %d %q", r.code, r.stdout)
	}
}
