package engine

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/parse"
)

// Benchmarks of the engine alone (no parsing, no sockets), with the
// production defaults: real clock, timer driver running, volatile fence
// allocator, crypto salt. One op is one full cycle as named below.

// benchNotifier stores a delivery in the session's owner, allocation-free.
type benchNotifier struct{}

type benchOwner struct{ last Result }

func (benchNotifier) Deliver(s *Session, r Result) { s.Owner.(*benchOwner).last = r }
func (benchNotifier) Backlogged(*Session) bool     { return false }

func newBenchEngine(b *testing.B) *Engine {
	b.Helper()
	e := New(Config{}, benchNotifier{})
	e.Start()
	b.Cleanup(e.Stop)
	return e
}

// benchLocker runs l+r cycles on one key for one session.
type benchLocker struct {
	e        *Engine
	s        *Session
	lock     parse.Request
	rel      parse.Request
	tok      [fence.TokenLen]byte
	granted  int
	timedOut int
}

func newBenchLocker(e *Engine, op parse.Op, key string, limit int64) *benchLocker {
	l := &benchLocker{e: e, s: e.NewSession(&benchOwner{})}
	rel := parse.OpRelease
	if op == parse.OpSemLock {
		rel = parse.OpSemRelease
	}
	l.lock = parse.Request{Op: op, Key: []byte(key), Lease: 10, Limit: limit}
	l.rel = parse.Request{Op: rel, Key: []byte(key)}
	return l
}

// cycle tries the lock (timeout 0) and releases it when granted. It
// reports with Errorf: RunParallel bodies must not call Fatal.
func (l *benchLocker) cycle(b *testing.B) {
	r := l.e.Do(l.s, &l.lock)
	if r.Status != parse.StatusOK {
		if r.Status == parse.StatusTimeout {
			l.timedOut++
			return
		}
		b.Errorf("%s: %+v", l.lock.Op, r)
		return
	}
	l.granted++
	l.rel.Token = r.Token.Append(l.tok[:0])
	if r := l.e.Do(l.s, &l.rel); r.Status != parse.StatusOK {
		b.Errorf("%s: %+v", l.rel.Op, r)
	}
}

// mustNotTimeOut: without contention every try-lock must succeed.
func (l *benchLocker) mustNotTimeOut(b *testing.B) {
	if l.timedOut > 0 {
		b.Errorf("%d uncontended try-locks timed out", l.timedOut)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	// One session, one existing key: the uncontended fast path.
	b.Run("uncontended", func(b *testing.B) {
		l := newBenchLocker(newBenchEngine(b), parse.OpLock, "bench-key", 0)
		l.cycle(b) // create the key
		b.ReportAllocs()
		for b.Loop() {
			l.cycle(b)
		}
		l.mustNotTimeOut(b)
	})
	// One session and one key per goroutine: scaling across shards.
	b.Run("parallel", func(b *testing.B) {
		e := newBenchEngine(b)
		var id atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			l := newBenchLocker(e, parse.OpLock, fmt.Sprintf("bench-key-%d", id.Add(1)), 0)
			l.cycle(b)
			for pb.Next() {
				l.cycle(b)
			}
			l.mustNotTimeOut(b)
		})
	})
	// Every goroutine try-locks the same key: one shard mutex, contended.
	// An op is one attempt, released when it succeeded.
	b.Run("hotkey-parallel", func(b *testing.B) {
		e := newBenchEngine(b)
		var granted, attempts atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			l := newBenchLocker(e, parse.OpLock, "bench-hot", 0)
			for pb.Next() {
				l.cycle(b)
			}
			granted.Add(int64(l.granted))
			attempts.Add(int64(l.granted + l.timedOut))
		})
		if n := attempts.Load(); n > 0 {
			b.ReportMetric(float64(granted.Load())/float64(n), "granted/op")
		}
	})
}

// BenchmarkSemaphore: sl (limit 4) + sr on an existing key, one session.
func BenchmarkSemaphore(b *testing.B) {
	l := newBenchLocker(newBenchEngine(b), parse.OpSemLock, "bench-sem", 4)
	l.cycle(b)
	b.ReportAllocs()
	for b.Loop() {
		l.cycle(b)
	}
	l.mustNotTimeOut(b)
}

// BenchmarkTwoPhase: e (fast path "acquired") + w (observes the grant) + r.
func BenchmarkTwoPhase(b *testing.B) {
	e := newBenchEngine(b)
	s := e.NewSession(&benchOwner{})
	key := []byte("bench-2pc")
	enq := parse.Request{Op: parse.OpEnqueue, Key: key, Lease: 10}
	wait := parse.Request{Op: parse.OpWait, Key: key, Timeout: 5}
	rel := parse.Request{Op: parse.OpRelease, Key: key}
	var tok [fence.TokenLen]byte
	cycle := func() {
		if r := e.Do(s, &enq); r.Status != parse.StatusAcquired {
			b.Fatalf("e: %+v", r)
		}
		r := e.Do(s, &wait)
		if r.Status != parse.StatusOK || r.Kind != KindGrant {
			b.Fatalf("w: %+v", r)
		}
		rel.Token = r.Token.Append(tok[:0])
		if r := e.Do(s, &rel); r.Status != parse.StatusOK {
			b.Fatalf("r: %+v", r)
		}
	}
	cycle()
	b.ReportAllocs()
	for b.Loop() {
		cycle()
	}
}

// BenchmarkHandOff: a waiter parks behind the holder, the holder releases,
// and the grant reaches the waiter through the Notifier; then the two
// swap roles. One op is one park plus one hand-off.
func BenchmarkHandOff(b *testing.B) {
	e := newBenchEngine(b)
	key := []byte("bench-handoff")
	holder, waiter := e.NewSession(&benchOwner{}), e.NewSession(&benchOwner{})
	park := parse.Request{Op: parse.OpLock, Key: key, Timeout: 10, Lease: 10}
	rel := parse.Request{Op: parse.OpRelease, Key: key}
	var tok [fence.TokenLen]byte
	r := e.Do(holder, &park)
	if r.Status != parse.StatusOK {
		b.Fatalf("first l: %+v", r)
	}
	held := r.Token
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Do(waiter, &park); !r.Blocked {
			b.Fatalf("l behind the holder: %+v", r)
		}
		rel.Token = held.Append(tok[:0])
		if r := e.Do(holder, &rel); r.Status != parse.StatusOK {
			b.Fatalf("r: %+v", r)
		}
		got := waiter.Owner.(*benchOwner).last
		if got.Status != parse.StatusOK || got.Kind != KindGrant {
			b.Fatalf("delivery: %+v", got)
		}
		held = got.Token
		waiter.Owner.(*benchOwner).last = Result{}
		holder, waiter = waiter, holder
	}
}
