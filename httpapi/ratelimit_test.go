package httpapi

import (
	"net/netip"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// The limiter's buckets are dropped once full again, by a sweep on the
// API's timer wheel; a sweep that leaves some runs again.
func TestRateLimiterSweep(t *testing.T) {
	ts := newServer(t, setup{fake: true, cfg: Config{RateLimitPerIP: 1000, RateLimitBurst: 1}})
	l := ts.api.limiter
	expect(t, "a request", ts.send(req{method: "GET", path: "/v1/stats"}), 200, "")
	if !armed(ts, &l.sweepNode) {
		t.Fatal("the first bucket did not arm the sweep")
	}
	// A bucket that is not full (another address, just used, at a rate
	// that refills in 1000 s) stays.
	slow := netip.MustParseAddr("192.0.2.1")
	b := rate.NewLimiter(0.001, 1)
	b.Allow()
	local := netip.MustParseAddr("127.0.0.1")
	l.mu.Lock()
	l.buckets[slow] = b
	fast := l.buckets[local]
	l.mu.Unlock()
	if fast == nil {
		t.Fatal("no bucket for the loopback client")
	}
	eventually(t, "the loopback client's bucket to refill", func() bool { return fast.TokensAt(time.Now()) >= 1 })
	ts.advance(limiterSweepMs * time.Millisecond)
	l.mu.Lock()
	n, kept := len(l.buckets), l.buckets[slow] != nil
	l.mu.Unlock()
	if n != 1 || !kept {
		t.Fatalf("after a sweep: %d buckets (the slow one kept: %v), want only the slow one", n, kept)
	}
	if !armed(ts, &l.sweepNode) {
		t.Fatal("a sweep that left a bucket did not run again")
	}
	// Once every bucket is full the map empties and the sweep stops,
	// until a new bucket arms it again.
	b.SetLimit(1000)
	eventually(t, "the slow bucket to refill", func() bool { return b.TokensAt(time.Now()) >= 1 })
	ts.advance(limiterSweepMs * time.Millisecond)
	l.mu.Lock()
	n = len(l.buckets)
	l.mu.Unlock()
	if n != 0 || armed(ts, &l.sweepNode) {
		t.Fatalf("%d buckets after a sweep of full ones (sweep armed: %v), want none and no sweep", n, armed(ts, &l.sweepNode))
	}
	expect(t, "a request", ts.send(req{method: "GET", path: "/v1/stats"}), 200, "")
	if !armed(ts, &l.sweepNode) {
		t.Fatal("a new bucket did not arm the sweep")
	}
}

// armed reads a node's state under the timers' lock.
func armed(ts *testServer, n *timerwheel.Node) bool {
	return ts.api.timers.Armed(n)
}
