package httpapi

import (
	"bytes"
	"encoding/hex"
	"io"
	"testing"

	"github.com/dflockd-ng/dflockd/cluster"
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/snapfile"
)

// TestClusterSnapshot: GET /v1/admin/snapshot streams the leader's
// state as a snapshot file whose header agrees with the leader's replica;
// the token, a follower and a single node answer as the other admin
// routes do.
func TestClusterSnapshot(t *testing.T) {
	admin := map[string]string{adminHeader: "s3cret"}
	expect(t, "single node", newServer(t, setup{cfg: Config{AdminToken: "s3cret"}}).send(req{method: "GET",
		path: "/v1/admin/snapshot", header: admin}), 404, codeNotFound)
	ms := startCluster(t, 3, Config{AdminToken: "s3cret"})
	l := leaderOf(t, ms)
	expect(t, "no token", l.send(req{method: "GET", path: "/v1/admin/snapshot"}), 401, codeUnauthorized)
	a := l.newSession()
	if g := l.lock(a, "k", 0); g.Status != "ok" {
		t.Fatalf("grant %+v", g)
	}
	for _, f := range ms {
		if f != l {
			eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
			expectNotLeader(t, "a snapshot on a follower", f.send(req{method: "GET", path: "/v1/admin/snapshot", header: admin}), l)
		}
	}
	r := l.send(req{method: "GET", path: "/v1/admin/snapshot", header: admin})
	if r.status != 200 || r.header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("snapshot: %d %s", r.status, r.header.Get("Content-Type"))
	}
	info, state, err := snapfile.Read(bytes.NewReader(r.body), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := info.Header
	// (The leader's clock ticks on: its replica may be past the header's
	// index already; the state decodes to the header's index and digest.)
	f := cluster.NewFSM(engine.Config{}, nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader(state))); err != nil {
		t.Fatal(err)
	}
	index, digest := f.Applied()
	if h.Index != index || h.Digest != hex.EncodeToString(digest[:]) || index > l.node.Raft().AppliedIndex() {
		t.Fatalf("header at %d digest %s; its state is at %d digest %x", h.Index, h.Digest, index, digest)
	}
	if len(h.Members) != 3 || h.LocksHeld != 1 || h.Keys != 1 || h.Fence != l.node.Engine().LastFence() || len(state) == 0 {
		t.Fatalf("header %+v", h)
	}
}
