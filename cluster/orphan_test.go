package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/cluster"
)

// TestStableRefReadoption: with an orphan TTL, a connection that
// presented a stable-ref and went away leaves its hold and its place in a
// queue (a wait under way when it went); a new connection presenting the ref gets the same token back,
// and its wait keeps the old place ahead of a later waiter. An orphan
// nobody takes over is closed once the TTL has passed, not before.
func TestStableRefReadoption(t *testing.T) {
	const ttl = time.Second
	ss := startServersWith(t, 3, func(c *cluster.Config) { steadyRaft(c); c.OrphanTTL = ttl })
	l := leaderOf(t, ss, nil)

	a := dial(t, l)
	if got := a.do("stable-ref", "client-a", "_"); got != "ok" {
		t.Fatalf("stable-ref: %q", got)
	}
	grant := a.do("l", "k", "0 30")
	tok := strings.Fields(grant)
	if len(tok) != 3 || tok[0] != "ok" {
		t.Fatalf("lock: %q", grant)
	}
	c := dial(t, l)
	if got := c.do("stable-ref", "client-c", "_"); got != "ok" {
		t.Fatalf("stable-ref: %q", got)
	}
	c.send("l", "k", "30 30") // waits behind a; its close must be seen all the same
	awaitWaiters(t, l, 1)
	d := dial(t, l)
	d.send("l", "k", "30 30") // waits behind c
	awaitWaiters(t, l, 2)
	a.c.Close()
	c.c.Close()
	awaitOrphans(t, l, 2)

	a2 := dial(t, l)
	if got := a2.do("stable-ref", "client-a", "_"); got != "ok" {
		t.Fatalf("stable-ref again: %q", got)
	}
	if got := a2.do("l", "k", "0 30"); got != grant {
		t.Fatalf("re-adopted lock: %q, want the same grant %q", got, grant)
	}
	c2 := dial(t, l)
	if got := c2.do("stable-ref", "client-c", "_"); got != "ok" {
		t.Fatalf("stable-ref again: %q", got)
	}
	c2.send("l", "k", "30 30") // back in c's place, ahead of d
	if got := a2.do("r", "k", tok[1]); got != "ok" {
		t.Fatalf("release by the re-adopted holder: %q", got)
	}
	if got := c2.reply(awaitFor); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("c's re-adopted wait: %q", got)
	}
	if _, waiting := l.node.Engine().LockCounts(); waiting != 1 {
		t.Fatalf("%d waiting; d should still be", waiting)
	}

	// An orphan nobody takes over goes after the TTL.
	e := dial(t, l)
	if got := e.do("stable-ref", "client-e", "_"); got != "ok" {
		t.Fatalf("stable-ref: %q", got)
	}
	if got := e.do("l", "k3", "0 60"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("lock k3: %q", got)
	}
	closed := time.Now()
	e.c.Close()
	f := dial(t, l)
	for {
		got := f.do("l", "k3", "0 60")
		if strings.HasPrefix(got, "ok ") {
			break
		}
		if got != "timeout" {
			t.Fatalf("try-lock of the orphan's key: %q", got)
		}
		if time.Since(closed) > ttl+awaitFor { // generous: only a reaper that never runs misses it
			t.Fatal("the orphan was never reaped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if held := time.Since(closed); held < ttl {
		t.Fatalf("the orphan's lock went %v after its connection closed, before the %v TTL", held, ttl)
	}
}

func awaitWaiters(t *testing.T, s *server, n int) {
	t.Helper()
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
		if _, waiting := s.node.Engine().LockCounts(); waiting == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never %d waiters", n)
		}
	}
}

// awaitOrphans waits until the leader's replica has n orphans: the closes
// reached the log (a new connection presenting the ref before that is a
// second live connection with it, which takes nothing over).
func awaitOrphans(t *testing.T, s *server, n int) {
	t.Helper()
	for deadline := time.Now().Add(awaitFor); s.node.FSM().Orphans() != n; time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never %d orphans (%d)", n, s.node.FSM().Orphans())
		}
	}
}
