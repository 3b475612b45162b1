package loop

import (
	"fmt"
	"testing"
	"time"
)

func TestFIFOFiveWaitersAcrossLoops(t *testing.T) {
	k := key("fifo")
	holder := dial(t, plain)
	tok := holder.do("l", k, "0 30", "ok T 30")[1]
	waiters := make([]*client, 6)
	for i := range waiters {
		waiters[i] = dial(t, plain)
		waiters[i].send("l", k, fmt.Sprintf("10 %d", 20+i))
		// The server must have queued this one before the next arrives;
		// a stats probe on the waiter's own key shows the queue length.
		waitFor(t, func() bool { return waitersOn(t, k) == i+1 })
	}
	holder.do("r", k, tok, "ok")
	for i, w := range waiters {
		f := w.expect(fmt.Sprintf("ok T %d", 20+i))
		for _, later := range waiters[i+1:] {
			later.silent(20 * time.Millisecond)
		}
		w.do("r", k, f[3:35], "ok")
	}
}

func TestLeaseExpiryHandsToNextWaiter(t *testing.T) {
	k := key("lease")
	a, b := dial(t, plain), dial(t, plain)
	tok := a.do("l", k, "0 1", "ok T 1")[1]
	b.send("l", k, "6 10")
	start := time.Now()
	b.expect("ok T 10")
	if el := time.Since(start); el < 800*time.Millisecond {
		t.Fatalf("handed over after %v, before the 1 s lease ended", el)
	}
	a.do("n", k, tok, "error")
	a.do("r", k, tok, "error")
}

func TestHolderDisconnectHandsOver(t *testing.T) {
	k := key("hdisc")
	a, b := dial(t, plain), dial(t, plain)
	tok := a.do("l", k, "0 30", "ok T 30")[1]
	b.send("l", k, "10 30")
	waitFor(t, func() bool { return waitersOn(t, k) == 1 })
	a.c.Close()
	b.expect("ok T 30")
	dial(t, plain).do("r", k, tok, "error")
}

func TestWaiterDisconnectLeavesQueue(t *testing.T) {
	k := key("wdisc")
	a, b, c := dial(t, plain), dial(t, plain), dial(t, plain)
	tok := a.do("l", k, "0 30", "ok T 30")[1]
	b.send("l", k, "10 30")
	waitFor(t, func() bool { return waitersOn(t, k) == 1 })
	c.send("l", k, "10 30")
	waitFor(t, func() bool { return waitersOn(t, k) == 2 })
	b.c.Close()
	waitFor(t, func() bool { return waitersOn(t, k) == 1 })
	a.do("r", k, tok, "ok")
	c.expect("ok T 30")
}

func TestTwoPhaseOverTheWire(t *testing.T) {
	k := key("2p")
	a, b := dial(t, plain), dial(t, plain)
	tok := a.do("e", k, "10", "acquired T 10")[1]
	a.do("e", k, "", "error_already_enqueued")
	b.do("w", k, "1", "error_not_enqueued")
	b.do("e", k, "10", "queued")
	a.do("w", k, "5", "ok "+tok+" 10")
	// Queued then granted while b waits in w.
	b.send("w", k, "5")
	b.silent(100 * time.Millisecond)
	a.do("r", k, tok, "ok")
	tok2 := b.expect("ok T 10")[3:35]
	// Wait timeout: a queues, waits 1 s, times out, and is no longer queued.
	a.do("e", k, "", "queued")
	a.send("w", k, "1")
	a.expect("timeout")
	a.do("w", k, "1", "error_not_enqueued")
	b.do("r", k, tok2, "ok")
	dial(t, plain).do("l", k, "0 5", "ok T 5")
}

func TestSemaphoreLimitTwoThreeClients(t *testing.T) {
	k := key("sem")
	a, b, c := dial(t, plain), dial(t, plain), dial(t, plain)
	ta := a.do("sl", k, "0 2 10", "ok T 10")[1]
	b.do("sl", k, "0 2 10", "ok T 10")
	c.do("sl", k, "0 2 10", "timeout")
	c.do("sl", k, "0 3 10", "error_limit_mismatch")
	c.send("sl", k, "10 2 10")
	c.silent(100 * time.Millisecond)
	a.do("sr", k, ta, "ok")
	c.expect("ok T 10")
}

func TestReleaseRenewAndWrongToken(t *testing.T) {
	k := key("rr")
	a := dial(t, plain)
	tok := a.do("l", k, "0 10", "ok T 10")[1]
	a.do("r", k, "0123456789abcdef0123456789abcdef", "error")
	a.do("r", k, "not-a-token", "error")
	a.do("n", k, tok+" 20", "ok 20")
	a.do("n", k, tok, "ok 33")
	a.do("r", k, tok, "ok")
	a.do("n", k, tok, "error")
}

// waitFor polls cond until it holds or the test's patience runs out.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
