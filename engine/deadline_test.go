package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// lateInTick is an instant just before a tick ends: the worst case for a
// clock truncated to whole ticks, which would start a deadline from the
// tick's beginning and so end it up to one tick early.
const lateInTick = timerwheel.Instant(time.Millisecond) - 1

// at places the harness clock at tick t plus ns nanoseconds.
func (h *harness) at(t timerwheel.Tick, ns timerwheel.Instant) timerwheel.Instant {
	i := timerwheel.Of(t) + ns
	h.clock.SetInstant(i)
	return i
}

// expireAt moves the clock to instant i and fires due timers.
func (h *harness) expireAt(i timerwheel.Instant) {
	h.clock.SetInstant(i)
	h.expire()
}

// TestDeadlinesNeverEndEarly starts every kind of deadline at x.999999 ms and
// checks that it still runs 1 ns before start + duration, and has ended once
// that instant is reached (rounded up to the next whole tick). With starts
// truncated to the tick, each of them ended up to 1 ms early (issue #14).
func TestDeadlinesNeverEndEarly(t *testing.T) {
	const dur = timerwheel.Instant(2 * time.Second)
	cases := []struct {
		name string
		// start begins the deadline at the current clock; running checks,
		// a little later, that it has not ended; ended that it has.
		start   func(h *harness, a, b SessionID)
		running func(h *harness, a, b SessionID)
		ended   func(h *harness, a, b SessionID)
	}{{
		name:    "lock lease",
		start:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(a, "l", "k", "0 2"), 2) },
		running: func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(b, "l", "k", "0"), vocab.StatusTimeout) },
		ended:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(b, "l", "k", "0"), 33) },
	}, {
		name:    "semaphore lease",
		start:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(a, "sl", "k", "0 1 2"), 2) },
		running: func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(b, "sl", "k", "0 1"), vocab.StatusTimeout) },
		ended:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(b, "sl", "k", "0 1"), 33) },
	}, {
		name: "renewed lease",
		start: func(h *harness, a, b SessionID) {
			// Granted at a whole tick, renewed late in another one.
			now := h.clock.Now()
			h.clock.SetInstant(timerwheel.Of(now.Tick() - 500))
			tk := wantGrant(h.t, h.do(a, "l", "k", "0 1"), 1)
			h.clock.SetInstant(now)
			if r := h.do(a, "n", "k", tk+" 2"); r.Status != vocab.StatusOK || r.Lease != 2 {
				h.t.Fatalf("renew: %+v", r)
			}
		},
		running: func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(b, "l", "k", "0"), vocab.StatusTimeout) },
		ended:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(b, "l", "k", "0"), 33) },
	}, {
		name: "acquire timeout",
		start: func(h *harness, a, b SessionID) {
			now := h.clock.Now()
			h.clock.SetInstant(timerwheel.Of(now.Tick() - 10))
			wantGrant(h.t, h.do(a, "l", "k", "0 30"), 30)
			h.clock.SetInstant(now)
			wantBlocked(h.t, h.do(b, "l", "k", "2"))
		},
		running: func(h *harness, a, b SessionID) { h.wantNothing(b) },
		ended:   func(h *harness, a, b SessionID) { h.wantDelivered(b, vocab.StatusTimeout) },
	}, {
		name: "wait timeout",
		start: func(h *harness, a, b SessionID) {
			wantGrant(h.t, h.do(a, "l", "k", "0 30"), 30)
			wantStatus(h.t, h.do(b, "e", "k", ""), vocab.StatusQueued)
			wantBlocked(h.t, h.do(b, "w", "k", "2"))
		},
		running: func(h *harness, a, b SessionID) { h.wantNothing(b) },
		ended:   func(h *harness, a, b SessionID) { h.wantDelivered(b, vocab.StatusTimeout) },
	}, {
		name:  "two-phase lease restarted by w",
		start: func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(a, "e", "k", "2"), vocab.StatusAcquired) },
		running: func(h *harness, a, b SessionID) {
			// w at the same late instant restarts the lease: still held.
			wantStatus(h.t, h.do(b, "l", "k", "0"), vocab.StatusTimeout)
		},
		ended: func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(b, "l", "k", "0"), 33) },
	}, {
		name:    "KV TTL",
		start:   func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(a, "kset", "k", "v\t2"), vocab.StatusOK) },
		running: func(h *harness, a, b SessionID) { wantValue(h.t, h.do(b, "kget", "k", "_"), "v") },
		ended:   func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(b, "kget", "k", "_"), vocab.StatusNil) },
	}, {
		name:    "blocking pop timeout",
		start:   func(h *harness, a, b SessionID) { wantBlocked(h.t, h.do(a, "blpop", "q", "2")) },
		running: func(h *harness, a, b SessionID) { h.wantNothing(a) },
		ended:   func(h *harness, a, b SessionID) { h.wantDelivered(a, vocab.StatusNil) },
	}, {
		name:    "barrier timeout",
		start:   func(h *harness, a, b SessionID) { wantBlocked(h.t, h.do(a, "bwait", "b", "2 2")) },
		running: func(h *harness, a, b SessionID) { h.wantNothing(a) },
		ended:   func(h *harness, a, b SessionID) { h.wantDelivered(a, vocab.StatusTimeout) },
	}, {
		name:    "election lease",
		start:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(a, "elect", "e", "0 2"), 2) },
		running: func(h *harness, a, b SessionID) { wantStatus(h.t, h.do(b, "elect", "e", "0"), vocab.StatusTimeout) },
		ended:   func(h *harness, a, b SessionID) { wantGrant(h.t, h.do(b, "elect", "e", "0"), 33) },
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			a, b := h.session(), h.session()
			start := h.at(5000, lateInTick)
			c.start(h, a, b)
			if c.name == "two-phase lease restarted by w" {
				// Observe the grant a little later, late in its tick too.
				start = h.at(5300, lateInTick)
				wantGrant(t, h.do(a, "w", "k", "1"), 2)
			}
			h.expireAt(start + dur - 1)
			c.running(h, a, b)
			h.expireAt(start + dur)
			c.running(h, a, b)
			h.expireAt(timerwheel.Of((start + dur).Tick() + 1))
			c.ended(h, a, b)
		})
	}
}

// TestHandOffLeaseStartsAtFiring: a lease handed to a waiter when the
// previous one expired runs from the instant the expiry is processed, not
// from the (earlier) tick it was due at.
func TestHandOffLeaseStartsAtFiring(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	h.at(1000, 0)
	wantGrant(t, h.do(a, "l", "k", "0 1"), 1)
	wantBlocked(t, h.do(b, "l", "k", "60 2"))
	// The driver runs late: a's lease was due at 2000 ms, fired at 2700.4.
	fired := timerwheel.Of(2700) + 400_000
	h.expireAt(fired)
	h.wantDelivered(b, vocab.StatusOK)
	h.expireAt(fired + timerwheel.Instant(2*time.Second) - 1)
	wantStatus(t, h.do(c, "l", "k", "0"), vocab.StatusTimeout)
	h.expireAt(timerwheel.Of((fired + timerwheel.Instant(2*time.Second)).Tick() + 1))
	wantGrant(t, h.do(c, "l", "k", "0"), 33)
}
