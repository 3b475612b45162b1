package main

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/dflockd-ng/dflockd/client"
)

// A Go client's waiting acquire and a stable-ref hold on a real 3-member
// cluster whose leader is killed with SIGKILL.

// waitersOf is how many wait for key, as m's stats say (false: m does
// not answer, or key is not held).
func waitersOf(m *member, key string) (int, bool) {
	st, ok := lockStat(m, key, failoverBudget/10)
	return st.Waiters, ok
}

type acquireResult struct {
	ok  bool
	err error
}

// TestClientWaitRidesLeaderKill: a Lock waits in the queue of a key held
// by another client when the leader is killed. The Lock reconnects to
// the new leader and waits there again (the new leader's queue shows
// it) instead of failing with ErrClosed; the holder releases by token
// on the new leader, and the waiter is granted: it holds the key, and
// releases it there.
func TestClientWaitRidesLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	ms := startMembers(t, 3)
	old, _ := leader(t, ms, nil, failoverBudget)
	holder := dialMember(t, old)
	grant := strings.Fields(holder.do("l", "w", "0 60", failoverBudget))
	if len(grant) != 3 || grant[0] != "ok" {
		t.Fatalf("holder: %q", grant)
	}
	holderToken := grant[1]

	waiter := &client.Lock{Key: "w", AcquireTimeout: 2 * failoverBudget, LeaseTTL: 10, RenewRatio: 0.1,
		Dialer: client.Cluster(clientAddrs(ms)...)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*failoverBudget)
	defer cancel()
	done := make(chan acquireResult, 1)
	go func() {
		ok, err := waiter.Acquire(ctx)
		done <- acquireResult{ok, err}
	}()
	t.Cleanup(func() { waiter.Close() })
	awaitCond(t, "the waiter queued on "+old.id, func() bool {
		n, _ := waitersOf(old, "w")
		return n == 1
	})

	old.signal(syscall.SIGKILL)
	next, _ := leader(t, ms, old, failoverBudget)
	t.Logf("%s killed, %s leads", old.id, next.id)
	// The new leader's promotion withdrew the old wait: a waiter there
	// is the acquire sent again.
	awaitCond(t, "the waiter queued again on "+next.id, func() bool {
		select {
		case r := <-done:
			t.Fatalf("Acquire returned %v, %v during the failover, before the holder released", r.ok, r.err)
		default:
		}
		n, _ := waitersOf(next, "w")
		return n == 1
	})

	if got := onLeader(t, ms, old, "r", "w", holderToken); got != "ok" {
		t.Fatalf("the holder's release by token on the new leader: %q", got)
	}
	var r acquireResult
	awaitCond(t, "the waiter's Acquire to return", func() bool {
		select {
		case r = <-done:
			return true
		default:
			return false
		}
	})
	if !r.ok || r.err != nil {
		t.Fatalf("Acquire = %v, %v, want granted on the new leader", r.ok, r.err)
	}
	if waiter.Token() == "" || waiter.Token() == holderToken {
		t.Fatalf("waiter's token %q (the holder's was %s)", waiter.Token(), holderToken)
	}
	if got := onLeader(t, ms, old, "l", "w", "0"); got != "timeout" {
		t.Fatalf("try-lock of w while the waiter holds it: %q, want timeout", got)
	}
	if err := waiter.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := onLeader(t, ms, old, "l", "w", "0"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("w after the waiter's Release: %q, want free", got)
	}
}

// TestStableRefReadoptsAfterLeaderKill: with --orphan-ttl, a Lock whose
// Dialer presents a stable ref holds a key when the leader is killed.
// The new leader keeps the dead leader's session as an orphan of that
// ref for the TTL, then closes it, releasing what it still holds; the
// Lock's new connection presents the ref and takes the session over, so
// the key is still held, renewed, with the same token and fence, after
// the cluster's clock has passed the TTL. (A connection presenting
// another ref renews by token until the orphan is closed at the TTL,
// which releases the key: run so, this test fails.) A probe lock
// granted on the new leader with a lease longer than the TTL, once
// expired, shows that the cluster's clock passed it.
func TestStableRefReadoptsAfterLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	const orphanTTL = "3"
	ms := startMembersWith(t, 3, "--orphan-ttl", orphanTTL)
	old, _ := leader(t, ms, nil, failoverBudget)
	d := client.Cluster(clientAddrs(ms)...)
	d.StableRef = "reporter-7"
	renewErrs := make(chan error, 1)
	l := &client.Lock{Key: "ref", LeaseTTL: 20, RenewRatio: 0.05, Dialer: d,
		OnRenewError: func(err error) { renewErrs <- err }}
	holdLock(t, l)
	t.Cleanup(func() { l.Close() })
	token, fence := l.Token(), l.Fence()
	if fence == 0 {
		t.Fatal("no fence")
	}

	old.signal(syscall.SIGKILL)
	next, _ := leader(t, ms, old, failoverBudget)
	t.Logf("%s killed, %s leads", old.id, next.id)
	if got := onLeader(t, ms, old, "l", "probe-clock", "0 4"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("probe: %q", got)
	}
	awaitCond(t, "the probe's 4 s lease to run out on "+next.id, func() bool {
		_, held := leaseLeft(next, "probe-clock")
		return !held
	})
	low := -1.0
	awaitCond(t, "a renewal of ref applied by "+next.id+" past the orphan TTL", func() bool {
		select {
		case <-l.Lost():
			t.Fatalf("reported lost past the orphan TTL (the orphan was not taken over): %v", l.Err())
		default:
		}
		left, ok := leaseLeft(next, "ref")
		switch {
		case !ok:
		case low < 0 || left < low:
			low = left
		case left > low+0.5:
			return true
		}
		return false
	})
	select {
	case <-l.Lost():
		t.Fatalf("reported lost: %v", l.Err())
	case err := <-renewErrs:
		t.Fatalf("OnRenewError(%v)", err)
	default:
	}
	if got := onLeader(t, ms, old, "l", "ref", "0"); got != "timeout" {
		t.Fatalf("try-lock of ref past the orphan TTL: %q, want timeout (still held)", got)
	}
	if l.Token() != token || l.Fence() != fence {
		t.Fatalf("token %s fence %d after the failover, want %s %d", l.Token(), l.Fence(), token, fence)
	}
	ctx, cancel := context.WithTimeout(context.Background(), failoverBudget)
	defer cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if got := onLeader(t, ms, old, "l", "ref", "0"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("ref after Release: %q, want free", got)
	}
}
