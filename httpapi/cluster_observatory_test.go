package httpapi

import (
	"testing"
)

// TestClusterFollowerObservatoryIdentity: every member's observatory shows
// a holder from its replica, with its session, connection and how long it
// has been connected. Its transport and remote address only the leader,
// which serves the connection, knows: the log does not carry them (issue
// #22 leaves that open), so a follower leaves them out rather than guess.
func TestClusterFollowerObservatoryIdentity(t *testing.T) {
	ms := startCluster(t, 3, Config{})
	l := leaderOf(t, ms)
	sid := l.newSession()
	if g := l.lock(sid, "obs", 0); g.Status != "ok" {
		t.Fatalf("lock on the leader: %+v", g)
	}
	holderOn := func(m *member) (clientJSON, bool) {
		kr := m.keys("?prefix=obs")
		if len(kr.Keys) != 1 || len(kr.Keys[0].Holders) != 1 {
			return clientJSON{}, false
		}
		return kr.Keys[0].Holders[0].Client, true
	}
	lc, ok := holderOn(l)
	if !ok || !lc.Open || lc.Transport != "http" || lc.RemoteAddr == "" || lc.ConnectedMs == nil {
		t.Fatalf("the leader shows the holder as %+v (found %v), want an open http client with its address and connection time", lc, ok)
	}
	for _, f := range ms {
		if f == l {
			continue
		}
		var fc clientJSON
		eventually(t, "the follower's replica to show the holder", func() bool {
			var ok bool
			fc, ok = holderOn(f)
			return ok
		})
		if fc.SessionID != lc.SessionID || fc.ConnID != lc.ConnID || !fc.Open || fc.ConnectedMs == nil {
			t.Fatalf("follower %s shows the holder as %+v; the leader as %+v", f.id, fc, lc)
		}
		if fc.Transport != "" || fc.RemoteAddr != "" {
			t.Fatalf("follower %s names the holder's transport %q and address %q, which its log does not carry", f.id, fc.Transport, fc.RemoteAddr)
		}
	}
}
