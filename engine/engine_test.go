package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// recorder keeps the effects delivered to each session, and delivers
// them as a transport would: a queue-group push goes to the first member
// not marked full, a push to a full session still arrives but does not
// count as a receiver.
type recorder struct {
	mu  sync.Mutex
	got map[SessionID][]Result
	// full marks sessions that report a full push backlog.
	full map[SessionID]bool
}

// route delivers fx and returns how many receivers its pushes reached.
func (r *recorder) route(fx *Effects) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[SessionID][]Result{}
	}
	n := int64(0)
	for i := range fx.List {
		f := &fx.List[i]
		to := f.To
		if f.Group != nil {
			for j := range f.Group {
				if m := f.Member(j); !r.full[m] {
					to = m
					n++
					break
				}
			}
		} else if f.Result.Kind == KindPush && !r.full[to] {
			n++
		}
		r.got[to] = append(r.got[to], f.Result)
	}
	return n
}

// take returns and clears the deliveries for s.
func (r *recorder) take(s SessionID) []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got[s]
	delete(r.got, s)
	return out
}

type harness struct {
	t     *testing.T
	clock *timerwheel.FakeClock
	rec   *recorder
	eng   *Engine
	fx    Effects
}

// testKey keys the token salts of test engines.
var testKey = TokenKey{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, clock: timerwheel.NewFakeClock(1000), rec: &recorder{}}
	cfg.Start = h.clock.Now()
	if cfg.TokenKey == (TokenKey{}) {
		cfg.TokenKey = testKey
	}
	h.eng = New(cfg)
	return h
}

// run applies c at the clock's time and delivers its effects; a signal's
// receiver count is filled in as the transport would.
func (h *harness) run(c Command) Result {
	h.t.Helper()
	c.At = h.clock.Now()
	h.fx.Reset()
	r := h.eng.Apply(&c, &h.fx)
	n := h.rec.route(&h.fx)
	if r.Kind == KindReceivers {
		r.Kind, r.Int = KindInt, n
	}
	return r
}

func (h *harness) session() SessionID { return h.run(Command{Kind: KindOpen}).Session }

// apply runs one parsed request for s.
func (h *harness) apply(s SessionID, req *vocab.Request) Result {
	h.t.Helper()
	return h.run(Command{Kind: KindRequest, Session: s, Req: *req})
}

// do runs one request given in wire form ("l key 10 5").
func (h *harness) do(s SessionID, cmd, key, arg string) Result {
	h.t.Helper()
	req, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
	if err != nil {
		h.t.Fatalf("%s %s %s: parse: %v", cmd, key, arg, err)
	}
	return h.apply(s, &req)
}

func (h *harness) close(s SessionID) { h.run(Command{Kind: KindClose, Session: s}) }
func (h *harness) gc()               { h.run(Command{Kind: KindGC}) }
func (h *harness) drain()            { h.run(Command{Kind: KindDrain}) }

// expire fires the timers due at the clock's time.
func (h *harness) expire() {
	h.fx.Reset()
	h.eng.Advance(h.clock.Now(), &h.fx)
	h.rec.route(&h.fx)
}

// advance moves the fake clock and fires due timers.
func (h *harness) advance(d time.Duration) {
	h.clock.Add(timerwheel.Tick(d.Milliseconds()))
	h.expire()
}

// stats is the stats document of the engine's profile.
func (h *harness) stats(connections int) string {
	return string(parse.AppendStats(nil, h.eng.Stats(h.clock.Now(), connections), h.eng.cfg.Profile))
}

// The foreign lock operations (foreign.go).
func (h *harness) acquireTagged(s SessionID, key []byte, leaseMs int64, wait bool, tag uint32) Result {
	return h.run(Command{Kind: KindTaggedAcquire, Session: s, Req: vocab.Request{Key: key}, LeaseMs: leaseMs, Wait: wait, Tag: tag})
}

func (h *harness) releaseOwn(s SessionID, key []byte) (released bool, tag uint32) {
	r := h.run(Command{Kind: KindOwnRelease, Session: s, Req: vocab.Request{Key: key}})
	return r.Status == vocab.StatusOK, r.Tag
}

func (h *harness) renewFence(s SessionID, key []byte, f uint64, leaseMs int64) bool {
	return h.run(Command{Kind: KindFenceRenew, Session: s, Req: vocab.Request{Key: key}, Fence: f, LeaseMs: leaseMs}).Status == vocab.StatusOK
}

func (h *harness) holderFence(key []byte) (uint64, bool) {
	r := h.run(Command{Kind: KindHolder, Req: vocab.Request{Key: key}})
	return r.Token.Fence, r.Status == vocab.StatusOK
}

func tok(r Result) string {
	var b [32]byte
	return string(r.Token.Append(b[:0]))
}

func wantStatus(t *testing.T, r Result, want vocab.Status) {
	t.Helper()
	if r.Blocked || r.Status != want {
		t.Fatalf("got %+v, want status %v", r, want)
	}
}

func wantGrant(t *testing.T, r Result, lease int64) string {
	t.Helper()
	if r.Blocked || r.Status != vocab.StatusOK || r.Kind != KindGrant || r.Lease != lease {
		t.Fatalf("got %+v, want grant with lease %d", r, lease)
	}
	return tok(r)
}

func wantBlocked(t *testing.T, r Result) {
	t.Helper()
	if !r.Blocked {
		t.Fatalf("got %+v, want blocked", r)
	}
}

func (h *harness) wantDelivered(s SessionID, want vocab.Status) Result {
	h.t.Helper()
	got := h.rec.take(s)
	if len(got) != 1 || got[0].Status != want {
		h.t.Fatalf("deliveries %+v, want one %v", got, want)
	}
	return got[0]
}

func (h *harness) wantNothing(s SessionID) {
	h.t.Helper()
	if got := h.rec.take(s); len(got) != 0 {
		h.t.Fatalf("unexpected deliveries %+v", got)
	}
}

func TestGrantReleaseAndTokens(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	t1 := wantGrant(t, h.do(a, "l", "k", "0 10"), 10)
	wantStatus(t, h.do(a, "r", "k", t1), vocab.StatusOK)
	wantStatus(t, h.do(a, "r", "k", t1), vocab.StatusError)
	t2 := wantGrant(t, h.do(a, "l", "k", "0"), 33)
	if t1 == t2 || t2 <= t1 {
		t.Fatalf("tokens must increase for one key: %s then %s", t1, t2)
	}
}

func TestFIFOHandOff(t *testing.T) {
	h := newHarness(t, Config{})
	holder := h.session()
	tk := wantGrant(t, h.do(holder, "l", "k", "0 30"), 30)
	var waiters []SessionID
	for i := 0; i < 6; i++ {
		w := h.session()
		wantBlocked(t, h.do(w, "l", "k", fmt.Sprintf("10 %d", 20+i)))
		waiters = append(waiters, w)
	}
	// A try-lock never jumps the queue.
	wantStatus(t, h.do(h.session(), "l", "k", "0"), vocab.StatusTimeout)
	wantStatus(t, h.do(holder, "r", "k", tk), vocab.StatusOK)
	for i, w := range waiters {
		g := h.wantDelivered(w, vocab.StatusOK)
		if g.Lease != int64(20+i) {
			t.Fatalf("waiter %d got lease %d", i, g.Lease)
		}
		for _, later := range waiters[i+1:] {
			h.wantNothing(later)
		}
		wantStatus(t, h.do(w, "r", "k", tok(g)), vocab.StatusOK)
	}
}

func TestTryLockAndNotReentrant(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	wantGrant(t, h.do(a, "l", "k", "0 10"), 10)
	wantStatus(t, h.do(a, "l", "k", "0"), vocab.StatusTimeout)
	wantBlocked(t, h.do(a, "l", "k", "1"))
	h.advance(999 * time.Millisecond)
	h.wantNothing(a)
	h.advance(time.Millisecond)
	h.wantDelivered(a, vocab.StatusTimeout)
}

func TestLeaseExpiryHandsOver(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	ta := wantGrant(t, h.do(a, "l", "k", "0 1"), 1)
	wantBlocked(t, h.do(b, "l", "k", "6 10"))
	h.advance(999 * time.Millisecond)
	h.wantNothing(b)
	h.advance(time.Millisecond)
	g := h.wantDelivered(b, vocab.StatusOK)
	wantStatus(t, h.do(a, "n", "k", ta), vocab.StatusError)
	wantStatus(t, h.do(a, "r", "k", ta), vocab.StatusError)
	wantStatus(t, h.do(b, "r", "k", tok(g)), vocab.StatusOK)
}

func TestExpiredLeaseEvictedWithoutDriver(t *testing.T) {
	// The clock passes the deadline but no timer has fired: requests must
	// still see the lease as gone.
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	ta := wantGrant(t, h.do(a, "l", "k", "0 1"), 1)
	tb := wantGrant(t, h.do(a, "l", "k2", "0 1"), 1)
	h.clock.Add(1300)
	wantStatus(t, h.do(a, "n", "k", ta), vocab.StatusError)
	wantGrant(t, h.do(b, "l", "k", "0 5"), 5)
	r := h.do(b, "e", "k2", "5")
	if r.Status != vocab.StatusAcquired {
		t.Fatalf("e on expired key: %+v", r)
	}
	wantStatus(t, h.do(a, "r", "k2", tb), vocab.StatusError)
}

func TestRenew(t *testing.T) {
	h := newHarness(t, Config{DefaultLease: 7 * time.Second})
	a := h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 3"), 3)
	h.advance(2 * time.Second)
	r := h.do(a, "n", "k", tk+" 3")
	if r.Kind != KindRenew || r.Lease != 3 {
		t.Fatalf("renew: %+v", r)
	}
	h.advance(2 * time.Second) // 4 s after grant, 2 s after renew
	wantStatus(t, h.do(h.session(), "l", "k", "0"), vocab.StatusTimeout)
	if r := h.do(a, "n", "k", tk); r.Lease != 7 {
		t.Fatalf("renew without ttl uses the server default: %+v", r)
	}
	wantStatus(t, h.do(a, "n", "k", "0123456789abcdef0123456789abcdef"), vocab.StatusError)
	wantStatus(t, h.do(a, "n", "other", tk), vocab.StatusError)
}

func TestReleaseByAnotherSession(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 10"), 10)
	wantStatus(t, h.do(b, "r", "k", tk), vocab.StatusOK)
	wantStatus(t, h.do(a, "n", "k", tk), vocab.StatusError)
}

func TestSemaphore(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	ta := wantGrant(t, h.do(a, "sl", "s", "0 2 10"), 10)
	wantGrant(t, h.do(b, "sl", "s", "0 2 10"), 10)
	wantStatus(t, h.do(c, "sl", "s", "0 2 10"), vocab.StatusTimeout)
	wantStatus(t, h.do(c, "sl", "s", "0 3 10"), vocab.StatusErrorLimitMismatch)
	wantStatus(t, h.do(c, "se", "s", "4"), vocab.StatusErrorLimitMismatch)
	wantBlocked(t, h.do(c, "sl", "s", "10 2 10"))
	// Namespaces are separate in v2: a semaphore token is no lock token.
	wantStatus(t, h.do(a, "r", "s", ta), vocab.StatusError)
	wantGrant(t, h.do(a, "l", "s", "0 10"), 10)
	wantStatus(t, h.do(a, "sr", "s", ta), vocab.StatusOK)
	h.wantDelivered(c, vocab.StatusOK)
}

func TestTwoPhase(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()

	r := h.do(a, "e", "k", "10")
	if r.Status != vocab.StatusAcquired || r.Kind != KindGrant || r.Lease != 10 {
		t.Fatalf("fast path: %+v", r)
	}
	ta := tok(r)
	wantStatus(t, h.do(a, "e", "k", ""), vocab.StatusErrorAlreadyEnqueued)
	wantStatus(t, h.do(b, "w", "k", "1"), vocab.StatusErrorNotEnqueued)
	wantStatus(t, h.do(b, "e", "k", "10"), vocab.StatusQueued)
	if g := h.do(a, "w", "k", "5"); tok(g) != ta || g.Lease != 10 {
		t.Fatalf("w after fast path: %+v", g)
	}
	wantStatus(t, h.do(a, "w", "k", "5"), vocab.StatusErrorNotEnqueued) // consumed

	// Queued, then granted before w: w answers at once.
	wantStatus(t, h.do(a, "r", "k", ta), vocab.StatusOK)
	h.wantNothing(b) // not parked: nothing delivered
	g := h.do(b, "w", "k", "5")
	if g.Status != vocab.StatusOK || g.Kind != KindGrant {
		t.Fatalf("w after queued grant: %+v", g)
	}

	// Queued and still waiting: w parks until release.
	wantStatus(t, h.do(a, "e", "k", "10"), vocab.StatusQueued)
	wantBlocked(t, h.do(a, "w", "k", "5"))
	wantStatus(t, h.do(b, "r", "k", tok(g)), vocab.StatusOK)
	h.wantDelivered(a, vocab.StatusOK)
}

func TestTwoPhaseWaitTimeoutConsumesState(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantStatus(t, h.do(b, "e", "k", ""), vocab.StatusQueued)
	wantBlocked(t, h.do(b, "w", "k", "1"))
	h.advance(time.Second)
	h.wantDelivered(b, vocab.StatusTimeout)
	wantStatus(t, h.do(b, "w", "k", "1"), vocab.StatusErrorNotEnqueued)
	// The timed-out waiter left the queue: release leaves the key free.
	wantStatus(t, h.do(a, "r", "k", tk), vocab.StatusOK)
	wantGrant(t, h.do(h.session(), "l", "k", "0 5"), 5)
	wantStatus(t, h.do(b, "w", "k", "0"), vocab.StatusErrorNotEnqueued)
}

func TestTwoPhaseLapsedGrant(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	if r := h.do(a, "e", "k", "1"); r.Status != vocab.StatusAcquired {
		t.Fatalf("%+v", r)
	}
	h.advance(1500 * time.Millisecond) // the driver evicts the holder
	wantStatus(t, h.do(a, "w", "k", "5"), vocab.StatusErrorLeaseExpired)
	// Second e after a lapse: fresh acquire (spec §I.2 O2).
	if r := h.do(a, "e", "k", "1"); r.Status != vocab.StatusAcquired {
		t.Fatalf("%+v", r)
	}
	h.advance(1500 * time.Millisecond)
	if r := h.do(a, "e", "k", "1"); r.Status != vocab.StatusAcquired {
		t.Fatalf("e after lapse: %+v", r)
	}
}

// Lapsed two-phase grants that are never waited for go with their idle
// keys: a session that sends e on ever-new keys and never w holds on to
// no more than the keys the GC has not pruned yet.
func TestLapsedGrantsForgottenWithTheirKeys(t *testing.T) {
	h := newHarness(t, Config{GCMaxIdle: 2 * time.Second, Shards: 1})
	a := h.session()
	if r := h.do(a, "e", "first", "1"); r.Status != vocab.StatusAcquired {
		t.Fatalf("%+v", r)
	}
	h.advance(1500 * time.Millisecond)
	// Lapsed and not yet pruned: w still reports the lost grant.
	h.gc()
	wantStatus(t, h.do(a, "w", "first", "0"), vocab.StatusErrorLeaseExpired)
	sess := h.eng.sessions.get(a)
	sh := &h.eng.shards[0]
	for round := range 50 {
		for i := range 100 {
			if r := h.do(a, "e", fmt.Sprintf("k%d.%d", round, i), "1"); r.Status != vocab.StatusAcquired {
				t.Fatalf("%+v", r)
			}
		}
		h.advance(1500 * time.Millisecond) // lapse
		h.gc()
		if n := sh.lapsed.n; n != 100 {
			t.Fatalf("round %d: %d lapsed grants, want 100 until their keys are pruned", round, n)
		}
		h.advance(2 * time.Second) // idle for gc-max-idle
		h.gc()
		if n := sh.lapsed.n; n != 0 {
			t.Fatalf("round %d: %d lapsed grants kept after GC", round, n)
		}
		if n := len(sess.enq[nsLock]); n > 2*100+minCompact {
			t.Fatalf("round %d: %d enqueue entries for 100 live ones", round, n)
		}
		if sh.nfree > sh.maxFree {
			t.Fatalf("%d free slots kept", sh.nfree)
		}
	}
	// A pruned lapsed grant is no longer enqueued, as in dflockd once it
	// has evicted the key's state.
	wantStatus(t, h.do(a, "w", "k49.0", "0"), vocab.StatusErrorNotEnqueued)
	if n := h.eng.Keys(); n != 0 {
		t.Fatalf("%d keys after GC", n)
	}
}

// The shards' free slot lists share one bound: a shard keeps its share of
// freeSlots (at least minFreeSlots) and the slots of a burst beyond it go
// back to the heap. Fewer shards keep more each, so that a default engine
// on few Ps (DefaultShardsFor) serves the same churn without allocating.
func TestFreeSlotsShareOneBound(t *testing.T) {
	for _, tc := range []struct{ shards, kept int }{{MaxDefaultShards, minFreeSlots}, {16, 200}} {
		h := newHarness(t, Config{Shards: tc.shards})
		sh := h.eng.shardFor([]byte("burst"))
		if want := max(minFreeSlots, freeSlots/tc.shards); sh.maxFree != want {
			t.Fatalf("%d shards: a shard keeps %d free slots, want %d", tc.shards, sh.maxFree, want)
		}
		if sh.nfree != 0 {
			t.Fatalf("%d free slots in a new engine", sh.nfree)
		}
		holder := h.session()
		wantStatus(t, h.do(holder, "l", "burst", "0 60"), vocab.StatusOK)
		var waiters []SessionID
		for range 200 {
			w := h.session()
			wantStatus(t, h.do(w, "e", "burst", "60"), vocab.StatusQueued)
			waiters = append(waiters, w)
		}
		for _, w := range waiters {
			h.close(w)
		}
		if got := sh.nfree; got != tc.kept {
			t.Fatalf("%d shards: %d of 200 freed waiters' slots kept, want %d", tc.shards, got, tc.kept)
		}
	}
}

func TestDefaultShardsFor(t *testing.T) {
	for procs, want := range map[int]int{0: 16, 1: 16, 2: 32, 3: 64, 8: 128, 16: 256, 64: 256} {
		if got := DefaultShardsFor(procs); got != want {
			t.Errorf("DefaultShardsFor(%d) = %d, want %d", procs, got, want)
		}
	}
}

func TestEnqueueThenReleaseClearsState(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	r := h.do(a, "e", "k", "10")
	wantStatus(t, h.do(a, "r", "k", tok(r)), vocab.StatusOK)
	wantStatus(t, h.do(a, "w", "k", "1"), vocab.StatusErrorNotEnqueued)
	if r := h.do(a, "e", "k", "10"); r.Status != vocab.StatusAcquired {
		t.Fatalf("%+v", r)
	}
}

func TestDisconnectCleanup(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c, d := h.session(), h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantGrant(t, h.do(a, "l", "k2", "0 30"), 30)
	wantGrant(t, h.do(a, "sl", "s", "0 2 30"), 30)
	wantBlocked(t, h.do(b, "l", "k", "10"))
	wantStatus(t, h.do(c, "e", "k", ""), vocab.StatusQueued)
	wantBlocked(t, h.do(d, "l", "k", "10"))
	h.close(b) // waiter leaves
	h.close(c) // enqueued leaves
	h.close(a) // holder: the next live waiter gets it
	h.wantNothing(b)
	h.wantNothing(c)
	h.wantDelivered(d, vocab.StatusOK)
	e := h.session()
	wantGrant(t, h.do(e, "l", "k2", "0 5"), 5)
	wantGrant(t, h.do(e, "sl", "s", "0 2 5"), 5)
	wantGrant(t, h.do(e, "sl", "s", "0 2 5"), 5)
}

func TestKeepOnDisconnect(t *testing.T) {
	h := newHarness(t, Config{KeepOnDisconnect: true})
	a, b, c := h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0 2"), 2)
	tb := wantGrant(t, h.do(b, "l", "k2", "0 30"), 30)
	wantBlocked(t, h.do(a, "l", "k2", "10"))
	h.close(a)
	// The held lock survives the disconnect until its lease ends ...
	wantStatus(t, h.do(c, "l", "k", "0"), vocab.StatusTimeout)
	// ... but the waiter does not (spec §I.7).
	wantStatus(t, h.do(b, "r", "k2", tb), vocab.StatusOK)
	h.wantNothing(a)
	wantGrant(t, h.do(c, "l", "k2", "0 5"), 5)
	h.advance(2 * time.Second)
	wantGrant(t, h.do(c, "l", "k", "0 5"), 5)
}

// TestCloseKeep: a close with Keep leaves the holds to their leases even
// when the configuration releases on disconnect (a cluster leader
// forgetting a previous leader's connections).
func TestCloseKeep(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0 2"), 2)
	wantGrant(t, h.do(b, "l", "plain", "0 30"), 30)
	h.run(Command{Kind: KindClose, Session: a, Keep: true})
	h.close(b)
	wantStatus(t, h.do(c, "l", "k", "0"), vocab.StatusTimeout)
	wantGrant(t, h.do(c, "l", "plain", "0 5"), 5)
	h.advance(2 * time.Second)
	wantGrant(t, h.do(c, "l", "k", "0 5"), 5)
}

func TestMaxLocksAndWaiters(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 2, MaxWaiters: 1})
	a := h.session()
	ta := wantGrant(t, h.do(a, "l", "a", "0"), 33)
	wantGrant(t, h.do(a, "sl", "b", "0 2"), 33)
	wantStatus(t, h.do(a, "l", "c", "0"), vocab.StatusErrorMaxLocks)
	wantStatus(t, h.do(a, "e", "c", ""), vocab.StatusErrorMaxLocks)
	// Existing keys still work at the cap.
	wantBlocked(t, h.do(h.session(), "l", "a", "10"))
	wantStatus(t, h.do(h.session(), "l", "a", "10"), vocab.StatusErrorMaxWaiters)
	wantStatus(t, h.do(h.session(), "l", "a", "0"), vocab.StatusErrorMaxWaiters)
	wantStatus(t, h.do(a, "r", "a", ta), vocab.StatusOK)
}

func TestIdleGC(t *testing.T) {
	h := newHarness(t, Config{MaxLocks: 1, GCMaxIdle: time.Second})
	a := h.session()
	tk := wantGrant(t, h.do(a, "sl", "s", "0 2 10"), 10)
	h.advance(5 * time.Second)
	h.gc()
	if h.eng.Keys() != 1 {
		t.Fatalf("a held key was collected")
	}
	wantStatus(t, h.do(a, "sr", "s", tk), vocab.StatusOK)
	h.advance(999 * time.Millisecond)
	h.gc()
	if h.eng.Keys() != 1 {
		t.Fatalf("collected before gc-max-idle")
	}
	h.advance(time.Millisecond)
	h.gc()
	if h.eng.Keys() != 0 {
		t.Fatalf("idle key not collected")
	}
	// The limit is forgotten with the key.
	wantGrant(t, h.do(a, "sl", "s", "0 3 10"), 10)
}

func TestDrainCancelsParked(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0"), 33)
	wantBlocked(t, h.do(b, "l", "k", "10"))
	h.drain()
	h.wantDelivered(b, vocab.StatusError)
	h.advance(20 * time.Second)
	h.wantNothing(b)
}

// brokenCeiling fails like an allocator whose persistence broke (spec §C.3).
type brokenCeiling struct{}

func (brokenCeiling) Reserve(uint64) error { return fmt.Errorf("fence: persist failed") }

func TestFenceFailureAnswersError(t *testing.T) {
	h := newHarness(t, Config{Ceiling: brokenCeiling{}})
	a := h.session()
	wantStatus(t, h.do(a, "l", "k", "0"), vocab.StatusError)
	wantStatus(t, h.do(a, "e", "k", ""), vocab.StatusError)
	wantStatus(t, h.do(a, "sl", "s", "5 2"), vocab.StatusError)
	if h.eng.Keys() != 2 {
		t.Fatalf("keys %d", h.eng.Keys())
	}
}

// A session that holds a key and also waits on it (locks are not
// re-entrant) must not be granted its own key while closing: waiters are
// dropped before holds are released, so the next session gets it.
func TestCloseCancelsWaitersBeforeReleasing(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantBlocked(t, h.do(a, "l", "k", "10"))
	wantBlocked(t, h.do(b, "l", "k", "10"))
	h.close(a)
	h.wantNothing(a)
	h.wantDelivered(b, vocab.StatusOK)
}

// rfProfile is the rf profile if rf, else v2.
func rfProfile(rf bool) vocab.Profile {
	if rf {
		return vocab.ProfileRF
	}
	return vocab.ProfileV2
}
