package engine

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// TestStress runs the engine as the server does: a real clock and timer
// driver, and several goroutines that each own sessions (as event loops
// own connections) hammering a handful of keys with l/r/n/e/w/sl/sr/se/sw,
// elect/resign/observe/unobserve, wrong tokens and disconnects, while GC and stats run alongside. Each
// worker receives its sessions' deliveries through its own inbox and
// checks that every parked request gets exactly one, and that nothing is
// delivered to a session once Close has returned. Holding is tracked with
// an atomic counter per key from the moment a worker observes a grant
// until just before it releases: a lock counter above 1 or a semaphore
// counter above its limit means two grants overlapped. Leases are far
// longer than the run, so no grant ends behind its holder's back.
func TestStress(t *testing.T) {
	const (
		workers     = 6
		perWorker   = 16
		runFor      = 1500 * time.Millisecond
		settleLimit = 30 * time.Second // generous: only requests that never resolve run it out
	)
	clock := timerwheel.NewMonoClock()
	rt := &stressRouter{t: t, sess: map[SessionID]*stressSess{}}
	eng := New(Config{
		Shards:       8,
		DefaultLease: time.Minute,
		GCMaxIdle:    -1, // prune idle keys at every GC: maximal churn
		Start:        clock.Now(),
		TokenKey:     testKey,
	})
	rt.eng, rt.clock = eng, clock

	keys := []*stressKey{
		{name: "k0", ns: nsLock, limit: 1},
		{name: "k1", ns: nsLock, limit: 1},
		{name: "k2", ns: nsLock, limit: 1},
		{name: "k0", ns: nsSem, limit: 2}, // same name, other namespace
		{name: "s1", ns: nsSem, limit: 3},
	}

	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Add(1)
	go func() { // timers, GC and stats, as the server's driver, ticker and stats requests do
		defer side.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			rt.advance()
			if i%2 == 0 {
				rt.run(Command{Kind: KindGC})
			}
			if k := eng.Keys(); k < 0 || k > len(keys) {
				t.Errorf("Keys() = %d with %d possible keys", k, len(keys))
			}
			if i%10 == 0 {
				_ = eng.Stats(clock.Now(), 0)
			}
		}
	}()

	var wg sync.WaitGroup
	ops := make([]int, workers)
	for i := range workers {
		w := &stressWorker{
			t: t, rt: rt, keys: keys, id: i,
			rng:  rand.New(rand.NewPCG(uint64(i), 7)),
			wake: make(chan struct{}, 1),
		}
		for range perWorker {
			w.sessions = append(w.sessions, w.newSession())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ops[i] = w.run(time.Now().Add(runFor), settleLimit)
		}()
	}
	wg.Wait()
	close(stop)
	side.Wait()

	total := 0
	for _, o := range ops {
		total += o
	}
	t.Logf("%d requests from %d workers", total, workers)
	for _, k := range keys {
		if h := k.holders.Load(); h != 0 {
			t.Errorf("%s/%d: %d holders counted after every release", k.name, k.ns, h)
		}
	}
	rt.run(Command{Kind: KindGC})
	if k := eng.Keys(); k != 0 {
		t.Errorf("Keys() = %d after every session released, closed and GC", k)
	}
	if snap := snapshotEngine(eng); len(snap) != 0 {
		t.Errorf("%d resources left in the shards: %v", len(snap), snap)
	}
	for i := range eng.shards {
		if n := len(eng.shards[i].elections); n != 0 {
			t.Errorf("shard %d: %d election names still watched after every session closed", i, n)
		}
	}
}

type stressKey struct {
	name    string
	ns      namespace
	limit   int
	holders atomic.Int32 // observed grants not yet released
}

// stressRouter applies commands and hands their effects to the sessions'
// workers, as the server's transports do. seq orders applies and closes:
// an effect for a session may be routed after its Close returned (the
// command that made it raced the close, and the transport drops it), but
// no command that started after the close may make one.
type stressRouter struct {
	t     *testing.T
	eng   *Engine
	clock timerwheel.Clock
	seq   atomic.Uint64
	mu    sync.Mutex
	sess  map[SessionID]*stressSess
}

func (rt *stressRouter) run(c Command) Result {
	var fx Effects
	start := rt.seq.Add(1)
	c.At = rt.clock.Now()
	r := rt.eng.Apply(&c, &fx)
	rt.route(&fx, start)
	return r
}

func (rt *stressRouter) advance() {
	var fx Effects
	start := rt.seq.Add(1)
	rt.eng.Advance(rt.clock.Now(), &fx)
	rt.route(&fx, start)
}

func (rt *stressRouter) route(fx *Effects, start uint64) {
	for _, f := range fx.List {
		rt.mu.Lock()
		ss := rt.sess[f.To]
		rt.mu.Unlock()
		if ss == nil {
			rt.t.Errorf("effect %+v for unknown session %#x", f.Result, uint64(f.To))
			continue
		}
		if c := ss.closedSeq.Load(); c != 0 && c < start {
			rt.t.Errorf("effect %+v to session %#x by a command that started after its Close returned", f.Result, uint64(f.To))
			continue
		}
		w := ss.w
		w.mu.Lock()
		w.inbox = append(w.inbox, stressDelivery{ss, f.Result})
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

type stressDelivery struct {
	ss *stressSess
	r  Result
}

type stressWorker struct {
	t        *testing.T
	rt       *stressRouter
	keys     []*stressKey
	id       int
	rng      *rand.Rand
	sessions []*stressSess

	mu    sync.Mutex
	inbox []stressDelivery
	wake  chan struct{}
}

type stressHold struct {
	key *stressKey
	tok fence.Token
}

// enqState is a session's two-phase state on one key.
type enqState uint8

const (
	enqNone     enqState = iota
	enqQueued            // e answered queued
	enqAcquired          // e answered acquired; the hold is counted already
)

type stressSess struct {
	w         *stressWorker
	s         SessionID
	closedSeq atomic.Uint64 // set once its Close has returned
	// Worker-confined below.
	parked   *stressKey // key of the parked request, nil if none
	holds    []stressHold
	enq      map[*stressKey]enqState
	enqToken map[*stressKey]fence.Token
}

func (w *stressWorker) newSession() *stressSess {
	ss := &stressSess{w: w, enq: map[*stressKey]enqState{}, enqToken: map[*stressKey]fence.Token{}}
	ss.s = w.rt.run(Command{Kind: KindOpen}).Session
	w.rt.mu.Lock()
	w.rt.sess[ss.s] = ss
	w.rt.mu.Unlock()
	return ss
}

func (w *stressWorker) errorf(format string, args ...any) {
	w.t.Errorf("worker %d: "+format, append([]any{w.id}, args...)...)
}

// hold counts an observed grant on k.
func (w *stressWorker) hold(ss *stressSess, k *stressKey, tok fence.Token) {
	if n := k.holders.Add(1); int(n) > k.limit {
		w.errorf("%s/%d: %d holders at once, limit %d", k.name, k.ns, n, k.limit)
	}
	ss.holds = append(ss.holds, stressHold{k, tok})
}

// drain applies the deliveries that arrived since the last call.
func (w *stressWorker) drain() {
	w.mu.Lock()
	items := w.inbox
	w.inbox = nil
	w.mu.Unlock()
	for _, d := range items {
		ss := d.ss
		if ss.closedSeq.Load() != 0 {
			continue // queued before Close: the transport drops these too
		}
		if d.r.Kind == KindPush {
			continue // a leader push to an observer: answers no request
		}
		if ss.parked == nil {
			w.errorf("delivery %+v to session %#x, which is not parked", d.r, uint64(ss.s))
			continue
		}
		k := ss.parked
		ss.parked = nil
		switch {
		case d.r.Status == vocab.StatusOK && d.r.Kind == KindGrant:
			w.hold(ss, k, d.r.Token)
		case d.r.Status == vocab.StatusTimeout:
		default:
			w.errorf("unexpected delivery %+v", d.r)
		}
	}
}

func (w *stressWorker) do(ss *stressSess, req *vocab.Request) Result {
	return w.rt.run(Command{Kind: KindRequest, Session: ss.s, Req: *req})
}

func (w *stressWorker) keyReq(op vocab.Op, k *stressKey) vocab.Request {
	if k.ns == nsSem {
		op += vocab.OpSemLock - vocab.OpLock // l→sl, r→sr, n→sn, e→se, w→sw
	}
	req := vocab.Request{Op: op, Key: []byte(k.name)}
	if k.ns == nsSem && (op == vocab.OpSemLock || op == vocab.OpSemEnqueue) {
		req.Limit = int64(k.limit)
	}
	return req
}

// release drops ss's i-th hold: uncount first, then release, so the next
// holder can never be counted before this one is gone.
func (w *stressWorker) release(ss *stressSess, i int) {
	h := ss.holds[i]
	ss.holds = append(ss.holds[:i], ss.holds[i+1:]...)
	h.key.holders.Add(-1)
	req := w.keyReq(vocab.OpRelease, h.key)
	if h.key.ns == nsLock && w.rng.IntN(3) == 0 {
		req.Op = vocab.OpResign // releases as r does
	}
	var b [fence.TokenLen]byte
	req.Token = h.tok.Append(b[:0])
	if r := w.do(ss, &req); r.Status != vocab.StatusOK {
		w.errorf("release of a held token: %+v", r)
	}
	if ss.enqToken[h.key] == h.tok {
		// Releasing the two-phase grant clears its enqueue state (§I.34).
		delete(ss.enq, h.key)
		delete(ss.enqToken, h.key)
	}
}

// closeSession disconnects ss: holds are uncounted before Close releases them.
func (w *stressWorker) closeSession(ss *stressSess) {
	for _, h := range ss.holds {
		h.key.holders.Add(-1)
	}
	ss.holds = nil
	w.rt.run(Command{Kind: KindClose, Session: ss.s})
	ss.closedSeq.Store(w.rt.seq.Add(1))
}

// step issues one random request for ss, or disconnects it and reports
// so (the caller replaces it).
func (w *stressWorker) step(ss *stressSess) (closed bool) {
	r := w.rng
	if r.IntN(100) < 2 {
		w.closeSession(ss)
		return true
	}
	if len(ss.holds) > 0 && r.IntN(100) < 45 {
		w.release(ss, r.IntN(len(ss.holds)))
		return false
	}
	k := w.keys[r.IntN(len(w.keys))]
	for pk, st := range ss.enq {
		if st == enqQueued && r.IntN(2) == 0 {
			// Finish a pending two-phase acquire soon: its grant may
			// already be held silently, blocking everyone behind it.
			timeout := int64(0)
			if r.IntN(4) == 0 && w.mayPark(ss) {
				timeout = 1
			}
			w.wait(ss, pk, timeout)
			return false
		}
	}
	switch x := r.IntN(100); {
	case x < 35: // l / sl
		req := w.keyReq(vocab.OpLock, k)
		if r.IntN(5) == 0 && w.mayPark(ss) {
			req.Timeout = 1 // parks: the shortest wait the protocol has
		}
		if r.IntN(2) == 0 {
			req.Lease = 30 + int64(r.IntN(30))
		}
		if k.ns == nsLock && r.IntN(3) == 0 {
			req.Op = vocab.OpElect // the same lock, plus leader pushes
		}
		res := w.do(ss, &req)
		switch {
		case res.Blocked:
			ss.parked = k
		case res.Status == vocab.StatusOK && res.Kind == KindGrant:
			w.hold(ss, k, res.Token)
		case res.Status == vocab.StatusTimeout && req.Timeout == 0:
		default:
			w.errorf("%s: %+v", req.Op, res)
		}
	case x < 45: // r / sr with a wrong token
		req := w.keyReq(vocab.OpRelease, k)
		req.Token = fence.Token{Fence: 1 << 63, Salt: r.Uint64()}.Append(nil)
		if res := w.do(ss, &req); res.Status != vocab.StatusError {
			w.errorf("release with a wrong token: %+v", res)
		}
	case x < 55: // n / sn on a held token
		if len(ss.holds) == 0 {
			return false
		}
		h := ss.holds[r.IntN(len(ss.holds))]
		req := w.keyReq(vocab.OpRenew, h.key)
		req.Token = h.tok.Append(nil)
		req.Lease = 30 + int64(r.IntN(30))
		if res := w.do(ss, &req); res.Status != vocab.StatusOK || res.Kind != KindRenew || res.Lease != req.Lease {
			w.errorf("renew of a held token: %+v", res)
		}
	case x < 75: // e / se, or w / sw where enqueued
		if ss.enq[k] == enqNone {
			req := w.keyReq(vocab.OpEnqueue, k)
			res := w.do(ss, &req)
			switch res.Status {
			case vocab.StatusAcquired:
				w.hold(ss, k, res.Token)
				ss.enq[k] = enqAcquired
				ss.enqToken[k] = res.Token
			case vocab.StatusQueued:
				ss.enq[k] = enqQueued
			default:
				w.errorf("%s: %+v", req.Op, res)
			}
			return false
		}
		timeout := int64(0)
		if r.IntN(4) == 0 && w.mayPark(ss) {
			timeout = 1
		}
		w.wait(ss, k, timeout)
	case x < 80: // observe / unobserve an election (a lock key)
		req := vocab.Request{Op: vocab.OpObserve, Key: []byte(k.name)}
		if r.IntN(2) == 0 {
			req.Op = vocab.OpUnobserve
		}
		if res := w.do(ss, &req); res.Status != vocab.StatusOK {
			w.errorf("%s: %+v", req.Op, res)
		}
	default: // w / sw without e
		if ss.enq[k] != enqNone {
			return false
		}
		req := w.keyReq(vocab.OpWait, k)
		req.Timeout = 1
		if res := w.do(ss, &req); res.Status != vocab.StatusErrorNotEnqueued {
			w.errorf("w without e: %+v", res)
		}
	}
	return false
}

// wait sends w/sw for ss's enqueue state on k.
func (w *stressWorker) wait(ss *stressSess, k *stressKey, timeout int64) {
	st := ss.enq[k]
	delete(ss.enq, k)
	delete(ss.enqToken, k)
	req := w.keyReq(vocab.OpWait, k)
	req.Timeout = timeout
	res := w.do(ss, &req)
	switch {
	case res.Blocked:
		if st != enqQueued {
			w.errorf("w parked after e acquired")
		}
		ss.parked = k
	case res.Status == vocab.StatusOK && res.Kind == KindGrant:
		if st == enqQueued {
			w.hold(ss, k, res.Token) // granted while queued: first seen now
		}
	case res.Status == vocab.StatusTimeout && timeout == 0 && st == enqQueued:
	default:
		w.errorf("%s after e (%d): %+v", req.Op, st, res)
	}
}

// run issues requests until end, then releases everything, waits for
// every parked request to resolve and closes its sessions. It returns the
// number of steps taken.
func (w *stressWorker) run(end time.Time, settle time.Duration) int {
	steps := 0
	for time.Now().Before(end) {
		w.drain()
		i := w.rng.IntN(len(w.sessions))
		ss := w.sessions[i]
		if ss.parked != nil {
			if w.allParked() {
				select {
				case <-w.wake:
				case <-time.After(5 * time.Millisecond):
				}
			}
			continue
		}
		if w.step(ss) {
			w.sessions[i] = w.newSession()
		}
		steps++
	}
	// Settle: give everything back, let parked requests resolve.
	deadline := time.Now().Add(settle)
	for {
		w.drain()
		busy := false
		for _, ss := range w.sessions {
			if ss.parked != nil {
				// What it sent now would queue behind its wait (queue.go):
				// every park has a timeout, which ends it.
				busy = true
				continue
			}
			for len(ss.holds) > 0 {
				w.release(ss, 0)
			}
			for k, st := range ss.enq {
				if st == enqQueued {
					w.wait(ss, k, 0)
				}
			}
			for len(ss.holds) > 0 {
				w.release(ss, 0)
			}
			if ss.parked != nil {
				busy = true // a w just parked
			}
		}
		if !busy {
			break
		}
		if time.Now().After(deadline) {
			w.errorf("parked requests unresolved %v after the run", settle)
			break
		}
		select {
		case <-w.wake:
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, ss := range w.sessions {
		w.closeSession(ss)
	}
	return steps
}

// mayPark keeps parking mostly to sessions that hold nothing (not even a
// two-phase grant they have not seen yet): a holder parked on another key
// keeps its grant for the whole timeout, and chains of those starve the
// run. They still happen, rarely.
func (w *stressWorker) mayPark(ss *stressSess) bool {
	return (len(ss.holds) == 0 && len(ss.enq) == 0) || w.rng.IntN(100) == 0
}

func (w *stressWorker) allParked() bool {
	for _, ss := range w.sessions {
		if ss.parked == nil {
			return false
		}
	}
	return true
}

func (k *stressKey) String() string { return fmt.Sprintf("%s/%d", k.name, k.ns) }
