package engine

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Benchmarks of the engine alone (no parsing, no sockets), with the
// production defaults apart from the clock: commands carry a fixed time,
// as if every request of a read batch arrived at once. One op is one full
// cycle as named below.

var benchAt = timerwheel.Instant(1e9)

func newBenchEngine(b *testing.B) *Engine {
	b.Helper()
	return New(Config{TokenKey: testKey, FenceFloor: 1 << 60})
}

// benchOpen opens a session.
func benchOpen(e *Engine) SessionID {
	var fx Effects
	return e.Apply(&Command{Kind: KindOpen, At: benchAt}, &fx).Session
}

// benchLocker runs l+r cycles on one key for one session.
type benchLocker struct {
	e        *Engine
	lock     Command
	rel      Command
	fx       Effects
	tok      [fence.TokenLen]byte
	granted  int
	timedOut int
}

func newBenchLocker(e *Engine, op vocab.Op, key string, limit int64) *benchLocker {
	s := benchOpen(e)
	l := &benchLocker{e: e}
	rel := vocab.OpRelease
	if op == vocab.OpSemLock {
		rel = vocab.OpSemRelease
	}
	l.lock = Command{Session: s, At: benchAt, Req: vocab.Request{Op: op, Key: []byte(key), Lease: 10, Limit: limit}}
	l.rel = Command{Session: s, At: benchAt, Req: vocab.Request{Op: rel, Key: []byte(key)}}
	return l
}

// cycle tries the lock (timeout 0) and releases it when granted. It
// reports with Errorf: RunParallel bodies must not call Fatal.
func (l *benchLocker) cycle(b *testing.B) {
	l.fx.Reset()
	r := l.e.Apply(&l.lock, &l.fx)
	if r.Status != vocab.StatusOK {
		if r.Status == vocab.StatusTimeout {
			l.timedOut++
			return
		}
		b.Errorf("%s: %+v", l.lock.Req.Op, r)
		return
	}
	l.granted++
	l.rel.Req.Token = r.Token.Append(l.tok[:0])
	if r := l.e.Apply(&l.rel, &l.fx); r.Status != vocab.StatusOK {
		b.Errorf("%s: %+v", l.rel.Req.Op, r)
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
		l := newBenchLocker(newBenchEngine(b), vocab.OpLock, "bench-key", 0)
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
			l := newBenchLocker(e, vocab.OpLock, fmt.Sprintf("bench-key-%d", id.Add(1)), 0)
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
			l := newBenchLocker(e, vocab.OpLock, "bench-hot", 0)
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
	l := newBenchLocker(newBenchEngine(b), vocab.OpSemLock, "bench-sem", 4)
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
	s := benchOpen(e)
	key := []byte("bench-2pc")
	enq := Command{Session: s, At: benchAt, Req: vocab.Request{Op: vocab.OpEnqueue, Key: key, Lease: 10}}
	wait := Command{Session: s, At: benchAt, Req: vocab.Request{Op: vocab.OpWait, Key: key, Timeout: 5}}
	rel := Command{Session: s, At: benchAt, Req: vocab.Request{Op: vocab.OpRelease, Key: key}}
	var tok [fence.TokenLen]byte
	var fx Effects
	cycle := func() {
		if r := e.Apply(&enq, &fx); r.Status != vocab.StatusAcquired {
			b.Fatalf("e: %+v", r)
		}
		r := e.Apply(&wait, &fx)
		if r.Status != vocab.StatusOK || r.Kind != KindGrant {
			b.Fatalf("w: %+v", r)
		}
		rel.Req.Token = r.Token.Append(tok[:0])
		if r := e.Apply(&rel, &fx); r.Status != vocab.StatusOK {
			b.Fatalf("r: %+v", r)
		}
		fx.Reset()
	}
	cycle()
	b.ReportAllocs()
	for b.Loop() {
		cycle()
	}
}

// BenchmarkHandOff: a waiter parks behind the holder, the holder releases,
// and the grant comes back as an effect for the waiter; then the two swap
// roles. One op is one park plus one hand-off.
func BenchmarkHandOff(b *testing.B) {
	e := newBenchEngine(b)
	key := []byte("bench-handoff")
	holder, waiter := benchOpen(e), benchOpen(e)
	park := Command{At: benchAt, Req: vocab.Request{Op: vocab.OpLock, Key: key, Timeout: 10, Lease: 10}}
	rel := Command{At: benchAt, Req: vocab.Request{Op: vocab.OpRelease, Key: key}}
	var tok [fence.TokenLen]byte
	var fx Effects
	park.Session = holder
	r := e.Apply(&park, &fx)
	if r.Status != vocab.StatusOK {
		b.Fatalf("first l: %+v", r)
	}
	held := r.Token
	b.ReportAllocs()
	for b.Loop() {
		park.Session = waiter
		if r := e.Apply(&park, &fx); !r.Blocked {
			b.Fatalf("l behind the holder: %+v", r)
		}
		rel.Session = holder
		rel.Req.Token = held.Append(tok[:0])
		if r := e.Apply(&rel, &fx); r.Status != vocab.StatusOK {
			b.Fatalf("r: %+v", r)
		}
		if len(fx.List) != 1 || fx.List[0].To != waiter || fx.List[0].Result.Kind != KindGrant {
			b.Fatalf("effects: %+v", fx.List)
		}
		held = fx.List[0].Result.Token
		fx.Reset()
		holder, waiter = waiter, holder
	}
}
