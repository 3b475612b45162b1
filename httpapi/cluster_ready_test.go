package httpapi

import (
	"strings"
	"testing"
)

// TestClusterReadyNeedsALeader: /ready answers 200 on the leader and on a
// follower that knows it (a follower redirects or forwards), 503
// no_leader on a member cut off from the others, which knows of no
// leader and could only answer not_leader with nowhere to go, and 200
// again once it is back among them (issue #23).
func TestClusterReadyNeedsALeader(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	var f *member
	for _, m := range ms {
		if m != l {
			f = m
			break
		}
	}
	eventually(t, "the follower to know its leader", func() bool { return f.node.LeaderAddr() != "" })
	ready := req{method: "GET", path: "/ready"}
	expect(t, "ready on the leader", l.send(ready), 200, "")
	expect(t, "ready on a follower that knows its leader", f.send(ready), 200, "")

	f.trans.DisconnectAll()
	for _, m := range ms {
		if m != f {
			m.trans.Disconnect(f.addr)
		}
	}
	eventually(t, "the cut-off member to lose its leader", func() bool { return f.node.LeaderAddr() == "" })
	r := f.send(ready)
	if r.status != 503 || !strings.Contains(string(r.body), `"status":"no_leader"`) {
		t.Fatalf("ready on a member without a leader: %d %s, want 503 no_leader", r.status, r.body)
	}
	expect(t, "health on a member without a leader", f.send(req{method: "GET", path: "/health"}), 200, "")

	connect(ms)
	eventually(t, "the member to be ready again", func() bool { return f.send(ready).status == 200 })
}
