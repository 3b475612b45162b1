package httpapi

import (
	"math"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// limiterSweepMs is how often idle buckets are dropped: a bucket that has
// refilled is the same as no bucket, so dropping it changes no answer,
// and the map stays as large as the set of recently active clients.
const limiterSweepMs = 60_000

// rateLimiter is --http-rate-limit-per-ip: a token bucket per client IP
// address (golang.org/x/time/rate).
type rateLimiter struct {
	sweepNode timerwheel.Node // first field: the sweep's timer (timers.go)
	limit     rate.Limit
	burst     int
	mu        sync.Mutex
	buckets   map[netip.Addr]*rate.Limiter
}

// newRateLimiter returns a limiter of perSecond requests a second per
// address, in bursts of burst (0: the rate, rounded up, at least 1).
func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &rateLimiter{
		sweepNode: timerwheel.Node{Kind: kindSweep},
		limit:     rate.Limit(perSecond),
		burst:     burst,
		buckets:   make(map[netip.Addr]*rate.Limiter),
	}
}

// allow takes a token from ip's bucket; first reports that the bucket is
// new, so that the caller arms the sweep.
func (l *rateLimiter) allow(ip netip.Addr, now time.Time) (ok, first bool) {
	l.mu.Lock()
	b := l.buckets[ip]
	if b == nil {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[ip] = b
		first = len(l.buckets) == 1
	}
	l.mu.Unlock()
	return b.AllowN(now, 1), first
}

// sweep drops the buckets that are full again, and reports whether any
// remain (then the sweep runs again later).
func (l *rateLimiter) sweep(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ip, b := range l.buckets {
		if b.TokensAt(now) >= float64(l.burst) {
			delete(l.buckets, ip)
		}
	}
	return len(l.buckets) > 0
}

// withRateLimit answers 429 to a client over its rate. The probes are
// exempt, so that a load balancer's checks never fail for a busy client.
func (a *API) withRateLimit(next http.Handler) http.Handler {
	if a.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/ready":
			next.ServeHTTP(w, r)
			return
		}
		ok, first := a.limiter.allow(clientIP(r), time.Now())
		if first {
			a.timers.armIdle(&a.limiter.sweepNode, a.clock.Now().After(limiterSweepMs))
		}
		if !ok {
			writeError(w, http.StatusTooManyRequests, codeRateLimited, "")
			return
		}
		next.ServeHTTP(w, r)
	})
}
