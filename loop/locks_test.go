package loop

import (
	"fmt"
	"testing"
	"time"
)

// waiters is the queue length of lock or semaphore k (stats array arr).
func (p profile) waiters(t *testing.T, arr, k string) int {
	t.Helper()
	return int(stat(t, p.ts, arr, k, "waiters"))
}

func fifoScenario(t *testing.T, p profile) {
	k := key("fifo")
	holder := p.dial(t)
	tok := holder.do("l", k, "0 30", p.grant(30))[1]
	waiters := make([]*client, 6)
	for i := range waiters {
		waiters[i] = p.dial(t)
		waiters[i].send("l", k, fmt.Sprintf("10 %d", 20+i))
		// The server must have queued this one before the next arrives;
		// a stats probe on the waiter's own key shows the queue length.
		waitFor(t, func() bool { return p.waiters(t, "locks", k) == i+1 })
	}
	holder.do("r", k, tok, "ok")
	for i, w := range waiters {
		f := w.expect(p.grant(20 + i))
		for _, later := range waiters[i+1:] {
			later.silent(20 * time.Millisecond)
		}
		w.do("r", k, f[3:35], "ok")
	}
}

func TestFIFOFiveWaitersAcrossLoops(t *testing.T)   { fifoScenario(t, v2Profile()) }
func TestFIFOFiveWaitersAcrossLoopsRF(t *testing.T) { fifoScenario(t, rfProfile()) }

func leaseExpiryScenario(t *testing.T, p profile) {
	k := key("lease")
	a, b := p.dial(t), p.dial(t)
	// Taken before a's request: the lease cannot start earlier, so the
	// hand-off cannot come less than the lease after it.
	start := time.Now()
	tok := a.do("l", k, "0 1", p.grant(1))[1]
	b.send("l", k, "20 10") // an acquire timeout far past the lease: only the grant ends the wait
	b.expect(p.grant(10))
	if el := time.Since(start); el < time.Second {
		t.Fatalf("handed over %v after the holder asked, before its 1 s lease ended", el)
	}
	// The expired holder was evicted by the hand-off: plain error in both.
	a.do("n", k, tok, "error")
	a.do("r", k, tok, "error")
}

func TestLeaseExpiryHandsToNextWaiter(t *testing.T)   { leaseExpiryScenario(t, v2Profile()) }
func TestLeaseExpiryHandsToNextWaiterRF(t *testing.T) { leaseExpiryScenario(t, rfProfile()) }

// renewExpiredScenario: renewing a lease that ran out with nobody waiting
// is error in v2 and error_lease_expired in rf (spec §B.0, §I.4, §I.2 O3);
// either way the holder is gone afterwards.
func renewExpiredScenario(t *testing.T, p profile) {
	k := key("nexp")
	a := p.dial(t)
	tok := a.do("l", k, "0 1", p.grant(1))[1]
	waitFor(t, func() bool { return stat(t, p.ts, "locks", k, "lease_expires_in_s") == 0 })
	if p.rf {
		a.do("n", k, tok, "error_lease_expired")
	} else {
		a.do("n", k, tok, "error")
	}
	a.do("n", k, tok, "error")
	a.do("r", k, tok, "error")
	a.do("l", k, "0 5", p.grant(5))
}

func TestRenewExpiredLease(t *testing.T)   { renewExpiredScenario(t, v2Profile()) }
func TestRenewExpiredLeaseRF(t *testing.T) { renewExpiredScenario(t, rfProfile()) }

func holderDisconnectScenario(t *testing.T, p profile) {
	k := key("hdisc")
	a, b := p.dial(t), p.dial(t)
	tok := a.do("l", k, "0 30", p.grant(30))[1]
	b.send("l", k, "10 30")
	waitFor(t, func() bool { return p.waiters(t, "locks", k) == 1 })
	a.c.Close()
	b.expect(p.grant(30))
	p.dial(t).do("r", k, tok, "error")
}

func TestHolderDisconnectHandsOver(t *testing.T)   { holderDisconnectScenario(t, v2Profile()) }
func TestHolderDisconnectHandsOverRF(t *testing.T) { holderDisconnectScenario(t, rfProfile()) }

// waiterDisconnectScenario: a waiter that goes away does not keep the
// lock from the next one. v2 notices at once and withdraws it; rf, as
// the redis-feats line (spec §A.6), reads nothing while a request waits,
// so the gone waiter keeps its place, is granted in turn, and the grant
// is released as soon as the close is noticed, after its reply.
func waiterDisconnectScenario(t *testing.T, p profile) {
	k := key("wdisc")
	a, b, c := p.dial(t), p.dial(t), p.dial(t)
	tok := a.do("l", k, "0 30", p.grant(30))[1]
	b.send("l", k, "10 30")
	waitFor(t, func() bool { return p.waiters(t, "locks", k) == 1 })
	c.send("l", k, "10 30")
	waitFor(t, func() bool { return p.waiters(t, "locks", k) == 2 })
	b.c.Close()
	if !p.rf {
		waitFor(t, func() bool { return p.waiters(t, "locks", k) == 1 })
	}
	a.do("r", k, tok, "ok")
	c.expect(p.grant(30))
}

func TestWaiterDisconnectLeavesQueue(t *testing.T)   { waiterDisconnectScenario(t, v2Profile()) }
func TestWaiterDisconnectLeavesQueueRF(t *testing.T) { waiterDisconnectScenario(t, rfProfile()) }

func twoPhaseScenario(t *testing.T, p profile) {
	k := key("2p")
	a, b := p.dial(t), p.dial(t)
	tok := a.do("e", k, "10", p.acquired(10))[1]
	a.do("e", k, "", "error_already_enqueued")
	b.do("w", k, "1", "error_not_enqueued")
	b.do("e", k, "10", "queued")
	a.do("w", k, "5", p.grantOf(tok, 10))
	// Queued then granted while b waits in w.
	b.send("w", k, "5")
	b.silent(100 * time.Millisecond)
	a.do("r", k, tok, "ok")
	tok2 := b.expect(p.grant(10))[3:35]
	// Wait timeout: a queues, waits 1 s, times out, and is no longer queued.
	a.do("e", k, "", "queued")
	a.send("w", k, "1")
	a.expect("timeout")
	a.do("w", k, "1", "error_not_enqueued")
	b.do("r", k, tok2, "ok")
	p.dial(t).do("l", k, "0 5", p.grant(5))
}

func TestTwoPhaseOverTheWire(t *testing.T)   { twoPhaseScenario(t, v2Profile()) }
func TestTwoPhaseOverTheWireRF(t *testing.T) { twoPhaseScenario(t, rfProfile()) }

func semaphoreScenario(t *testing.T, p profile) {
	k := key("sem")
	a, b, c := p.dial(t), p.dial(t), p.dial(t)
	ta := a.do("sl", k, "0 2 10", p.grant(10))[1]
	tb := b.do("sl", k, "0 2 10", p.grant(10))[1]
	if ta == tb {
		t.Fatalf("two holders share token %s", ta)
	}
	c.do("sl", k, "0 2 10", "timeout")
	c.do("sl", k, "0 3 10", "error_limit_mismatch")
	b.do("sn", k, tb+" 20", p.renewed(tb, 20))
	c.send("sl", k, "10 2 10")
	waitFor(t, func() bool { return p.waiters(t, "semaphores", k) == 1 })
	a.do("sr", k, ta, "ok")
	c.expect(p.grant(10))
}

func TestSemaphoreLimitTwoThreeClients(t *testing.T)   { semaphoreScenario(t, v2Profile()) }
func TestSemaphoreLimitTwoThreeClientsRF(t *testing.T) { semaphoreScenario(t, rfProfile()) }

// namespaceScenario: v2 keeps locks and semaphores apart; rf has one map
// in which a lock is a semaphore of limit 1 (spec §B.2, §I.6).
func namespaceScenario(t *testing.T, p profile) {
	k := key("ns")
	a, b := p.dial(t), p.dial(t)
	tok := a.do("l", k, "0 30", p.grant(30))[1]
	if p.rf {
		b.do("sl", k, "0 3 30", "error_limit_mismatch")
		b.do("sl", k, "0 1 30", "timeout") // the same lock, held
		b.do("sn", k, tok, p.renewed(tok, 33))
		b.do("sr", k, tok, "ok") // s* commands reach the lock
		b.do("l", k, "0 30", p.grant(30))
		return
	}
	b.do("sl", k, "0 3 30", p.grant(30)) // another resource of the same name
	b.do("sl", k, "0 1 30", "error_limit_mismatch")
	b.do("sn", k, tok, "error")
	b.do("sr", k, tok, "error") // s* commands never touch the lock
	b.do("l", k, "0 30", "timeout")
	a.do("r", k, tok, "ok")
}

func TestLockSemaphoreNamespaces(t *testing.T)   { namespaceScenario(t, v2Profile()) }
func TestLockSemaphoreNamespacesRF(t *testing.T) { namespaceScenario(t, rfProfile()) }

func releaseRenewScenario(t *testing.T, p profile) {
	k := key("rr")
	a := p.dial(t)
	tok := a.do("l", k, "0 10", p.grant(10))[1]
	a.do("r", k, "0123456789abcdef0123456789abcdef", "error")
	a.do("r", k, "not-a-token", "error")
	a.do("n", k, tok+" 20", p.renewed(tok, 20))
	a.do("n", k, tok, p.renewed(tok, 33)) // the server default, not the first lease
	a.do("r", k, tok, "ok")
	a.do("n", k, tok, "error")
}

func TestReleaseRenewAndWrongToken(t *testing.T)   { releaseRenewScenario(t, v2Profile()) }
func TestReleaseRenewAndWrongTokenRF(t *testing.T) { releaseRenewScenario(t, rfProfile()) }

// waitFor polls cond until it holds or the test's patience (replyWithin)
// runs out.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(replyWithin)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached within %v", replyWithin)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
