package clienttest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testport"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// follower fakes a cluster follower: ping and stats work, anything else
// is refused with error_not_leader naming leader ("" for a bare refusal,
// as a follower that knows no leader sends).
func follower(t *testing.T, leader string) *testserver.Fake {
	return testserver.StartFake(t, nil, func(cmd, _, _ string) string {
		switch {
		case cmd == "ping":
			return "ok"
		case leader == "":
			return "error_not_leader"
		}
		return "error_not_leader " + leader
	})
}

func TestClusterFollowsRedirectToListedLeader(t *testing.T) {
	t.Parallel()
	leader := testserver.Start(t)
	f := follower(t, leader.Addr())
	d := client.Dialer{Members: []string{f.Addr(), leader.Addr()}}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), "") // tries members in order: the follower first
	must(t, err)
	defer c.Close()
	if c.Addr() != f.Addr() {
		t.Fatalf("dialled %s, want the first member %s", c.Addr(), f.Addr())
	}
	tok, _, err := client.Acquire(c, "k", 0)
	must(t, err)
	if c.Addr() != leader.Addr() {
		t.Fatalf("after the redirect the connection talks to %s, want the leader %s", c.Addr(), leader.Addr())
	}
	if got := f.Requests(); len(got) != 1 || got[0] != "l k 0" {
		t.Fatalf("follower received %q, want one l", got)
	}
	// The lock really is on the leader, and later requests go there directly.
	probe := dial(t, leader.Addr())
	_, _, err = client.Acquire(probe, "k", 0)
	wantErr(t, err, client.ErrTimeout, "Acquire on the leader")
	must(t, client.Release(c, "k", tok))
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("follower received %d requests, want no more after the redirect", n)
	}
}

func TestClusterRedirectOnlyToMembers(t *testing.T) {
	t.Parallel()
	leader := testserver.Start(t)
	f := follower(t, leader.Addr())
	d := client.Dialer{Members: []string{f.Addr()}} // the leader is not listed
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), "")
	must(t, err)
	defer c.Close()
	_, err = client.Incr(c, "n", 1)
	var nl *client.NotLeaderError
	if !errors.As(err, &nl) || nl.Leader != leader.Addr() {
		t.Fatalf("Incr = %v, want a *NotLeaderError naming %s", err, leader.Addr())
	}
	if !errors.Is(err, client.ErrNotLeader) || !errors.Is(err, client.ErrServer) {
		t.Fatalf("%v does not match ErrNotLeader and ErrServer", err)
	}
	if c.Addr() != f.Addr() {
		t.Fatalf("connection moved to %s, an address outside the members", c.Addr())
	}
	// Without Members, no redirect is followed at all.
	plain := dial(t, f.Addr())
	_, err = client.Incr(plain, "n", 1)
	wantErr(t, err, client.ErrNotLeader, "Incr without cluster mode")
	must(t, client.Ping(plain)) // not refused: pings work on followers
}

func TestClusterRedirectBudget(t *testing.T) {
	t.Parallel()
	leader := testserver.Start(t)
	// A chain of followers, each naming the next as leader.
	f3 := follower(t, leader.Addr())
	f2 := follower(t, f3.Addr())
	f1 := follower(t, f2.Addr())
	members := []string{f1.Addr(), f2.Addr(), f3.Addr(), leader.Addr()}
	for _, tc := range []struct {
		budget int
		ok     bool
	}{{2, false}, {3, true}, {-1, false}} {
		d := client.Dialer{Members: members, MaxRedirects: tc.budget}
		c, err := d.Dial(ctxTimeout(t, 10*time.Second), "")
		must(t, err)
		_, err = client.Incr(c, "n", 1)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, client.ErrNotLeader) {
			t.Errorf("budget %d: %v", tc.budget, err)
		}
		c.Close()
	}
	// The default budget is 3.
	d := client.Dialer{Members: members}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), "")
	must(t, err)
	defer c.Close()
	if _, err := client.Incr(c, "n", 1); err != nil {
		t.Fatalf("default budget: %v", err)
	}
}

func TestClusterUnknownLeaderTriesNextMember(t *testing.T) {
	t.Parallel()
	leader := testserver.Start(t)
	lost := follower(t, "") // knows no leader
	d := client.Dialer{Members: []string{lost.Addr(), leader.Addr()}}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), "")
	must(t, err)
	defer c.Close()
	if v, err := client.Incr(c, "n", 2); err != nil || v != 2 {
		t.Fatalf("Incr = %d, %v", v, err)
	}
	if c.Addr() != leader.Addr() {
		t.Fatalf("talking to %s, want %s", c.Addr(), leader.Addr())
	}
}

// TestClusterLeaderTakingOverIsAskedAgain: a member that raft has just
// made the leader refuses requests until its promotion applies, naming
// itself. The client asks it again after pauses instead of following
// that as a redirect: a stable-ref at the dial and a request, each
// refused more times than MaxRedirects, both go through once it serves.
// (Followed as redirects, the refusals used up the budget in a
// millisecond and the request failed with "not the cluster leader;
// leader is <that member>".)
func TestClusterLeaderTakingOverIsAskedAgain(t *testing.T) {
	t.Parallel()
	const refusals = client.DefaultMaxRedirects + 2
	ln := testport.Listen(t)
	self := ln.Addr().String()
	var mu sync.Mutex
	refused := map[string]int{}
	elect := testserver.StartFake(t, ln, func(cmd, _, _ string) string {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case cmd == "ping":
			return "ok"
		case refused[cmd] < refusals:
			refused[cmd]++
			return "error_not_leader " + self
		case cmd == "incr":
			return "ok 7"
		}
		return "ok"
	})
	f := follower(t, self)
	d := client.Dialer{Members: []string{f.Addr(), self}, StableRef: "taking-over"}
	c, err := d.Dial(ctxTimeout(t, 30*time.Second), self)
	must(t, err)
	defer c.Close()
	if v, err := client.Incr(c, "n", 1); err != nil || v != 7 {
		t.Fatalf("Incr = %d, %v; want 7 from the member once it serves", v, err)
	}
	if c.Addr() != self {
		t.Fatalf("talking to %s, want the new leader %s", c.Addr(), self)
	}
	count := map[string]int{}
	for _, r := range elect.Requests() {
		count[strings.Fields(r)[0]]++
	}
	if count["stable-ref"] != refusals+1 || count["incr"] != refusals+1 {
		t.Fatalf("the new leader received %v, want %d stable-refs and %d incrs (refused %d times each, then served)",
			count, refusals+1, refusals+1, refusals)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("the follower received %d requests, want none: the dial started at the new leader", n)
	}

	// LeaderWait < 0 waits for nobody: the first self-naming refusal is
	// the request's error.
	mu.Lock()
	refused["incr"] = 0
	mu.Unlock()
	d.LeaderWait = -1
	c2, err := d.Dial(ctxTimeout(t, 30*time.Second), self)
	must(t, err)
	defer c2.Close()
	_, err = client.Incr(c2, "n", 1)
	var nl *client.NotLeaderError
	if !errors.As(err, &nl) || nl.Leader != self {
		t.Fatalf("Incr with LeaderWait < 0 = %v, want a *NotLeaderError naming %s", err, self)
	}
}

// TestClusterLockRenewsThroughRedirect: a Lock in cluster mode acquires
// through a follower and keeps renewing on the leader.
func TestClusterLockRenewsThroughRedirect(t *testing.T) {
	t.Parallel()
	leader := testserver.Start(t)
	f := follower(t, leader.Addr())
	l := &client.Lock{Key: "job", LeaseTTL: 1, Dialer: &client.Dialer{Members: []string{f.Addr(), leader.Addr()}}}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Release(context.Background())
	probe := dial(t, leader.Addr())
	// Past two lease lengths: only renewal on the leader keeps it held.
	for until := time.Now().Add(2500 * time.Millisecond); time.Now().Before(until); {
		_, _, err := client.Acquire(probe, "job", 0)
		wantErr(t, err, client.ErrTimeout, "try-lock of the renewed lock")
		time.Sleep(100 * time.Millisecond) // pacing the probes
	}
}
