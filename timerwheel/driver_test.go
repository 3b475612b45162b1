package timerwheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// testTarget is a Target built the way the engine's shards are: a wheel
// under a mutex, and the earliest deadline it has published to the driver.
type testTarget struct {
	i      int
	d      *Driver
	budget int
	fire   func(n *Node, now Tick) // called under mu

	mu        sync.Mutex
	w         *Wheel
	published Tick

	expires atomic.Int32
	// Hooks simulating other goroutines: before Expire takes the lock, and
	// after it released it but before the driver records the answer.
	beforeLock, afterUnlock func()
}

func newTestDriver(clock Clock, n int) (*Driver, []*testTarget) {
	tts := make([]*testTarget, n)
	targets := make([]Target, n)
	for i := range tts {
		tts[i] = &testTarget{i: i, w: New(clock.Now().Tick()), published: never}
		targets[i] = tts[i]
	}
	d := NewDriver(clock, targets)
	for _, tt := range tts {
		tt.d = d
	}
	return d, tts
}

func (tt *testTarget) arm(n *Node, deadline Tick) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.w.Reset(n, deadline)
	if deadline < tt.published {
		tt.published = deadline
		tt.d.Notify(tt.i, deadline)
	}
}

func (tt *testTarget) cancel(n *Node) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.w.Cancel(n)
}

func (tt *testTarget) Expire(at Instant) (next Tick, ok bool) {
	now := at.Tick()
	if h := tt.beforeLock; h != nil {
		tt.beforeLock = nil
		h()
	}
	tt.mu.Lock()
	tt.expires.Add(1)
	more := tt.w.Advance(now, tt.budget, func(n *Node) {
		if tt.fire != nil {
			tt.fire(n, tt.w.Now())
		}
	})
	if more {
		next, ok = now, true
	} else {
		next, ok = tt.w.NextDeadline()
	}
	tt.published = never
	if ok {
		tt.published = next
	}
	tt.mu.Unlock()
	if h := tt.afterUnlock; h != nil {
		tt.afterUnlock = nil
		h()
	}
	return next, ok
}

// firedList records fired deadlines; for tests that run RunOnce themselves.
type firedList struct {
	mu  sync.Mutex
	got []Tick
}

func (f *firedList) fire(n *Node, now Tick) {
	f.mu.Lock()
	f.got = append(f.got, n.Deadline())
	f.mu.Unlock()
}

func (f *firedList) take() []Tick {
	f.mu.Lock()
	defer f.mu.Unlock()
	got := f.got
	f.got = nil
	return got
}

func TestDriverRunOnce(t *testing.T) {
	clock := NewFakeClock(1000)
	d, tts := newTestDriver(clock, 3)
	var fired firedList
	for _, tt := range tts {
		tt.fire = fired.fire
	}
	var a, b, c Node
	tts[0].arm(&a, 1100)
	tts[1].arm(&b, 1050)
	tts[1].arm(&c, 1070) // later than published: no Notify needed

	if next, ok := d.RunOnce(Of(1000)); !ok || next != 1050 {
		t.Fatalf("RunOnce(1000) = %d %v, want 1050", next, ok)
	}
	if n := tts[0].expires.Load() + tts[1].expires.Load() + tts[2].expires.Load(); n != 0 {
		t.Fatalf("%d Expire calls before anything is due", n)
	}
	if next, ok := d.RunOnce(Of(1060)); !ok || next != 1070 {
		t.Fatalf("RunOnce(1060) = %d %v, want 1070", next, ok)
	}
	if got := fired.take(); len(got) != 1 || got[0] != 1050 {
		t.Fatalf("fired %v, want [1050]", got)
	}
	if tts[0].expires.Load() != 0 || tts[2].expires.Load() != 0 {
		t.Fatal("Expire called on a target with nothing due")
	}
	if next, ok := d.RunOnce(Of(2000)); ok {
		t.Fatalf("RunOnce(2000) = %d, want none left", next)
	}
	if got := fired.take(); len(got) != 2 {
		t.Fatalf("fired %v, want 1070 and 1100", got)
	}
}

// TestDriverNotifyAroundExpire checks the two windows where a Notify races
// with Expire: before Expire takes the target's lock (the driver has just
// cleared the published deadline) and after Expire released it but before the
// driver recorded its answer. Neither deadline may be lost.
func TestDriverNotifyAroundExpire(t *testing.T) {
	for _, window := range []string{"beforeLock", "afterUnlock"} {
		t.Run(window, func(t *testing.T) {
			d, tts := newTestDriver(NewFakeClock(0), 1)
			tt := tts[0]
			var fired firedList
			tt.fire = fired.fire
			var a, late, early Node
			tt.arm(&a, 100)
			tt.arm(&late, 500)
			hook := func() { tt.arm(&early, 200) }
			if window == "beforeLock" {
				tt.beforeLock = hook
			} else {
				tt.afterUnlock = hook
			}
			// Wheels may answer with a lower bound (a slot start), so
			// the check is "not later", which is what the driver needs.
			if next, ok := d.RunOnce(Of(100)); !ok || next > 200 || next <= 100 {
				t.Fatalf("RunOnce(100) = %d %v, want in (100, 200]", next, ok)
			}
			if next, ok := d.RunOnce(Of(200)); !ok || next > 500 || next <= 200 {
				t.Fatalf("RunOnce(200) = %d %v, want in (200, 500]", next, ok)
			}
			if got := fired.take(); len(got) != 2 || got[1] != 200 {
				t.Fatalf("fired %v, want [100 200]", got)
			}
		})
	}
}

func TestDriverBudget(t *testing.T) {
	d, tts := newTestDriver(NewFakeClock(0), 2)
	var fired firedList
	tts[0].budget = 2
	tts[0].fire = fired.fire
	nodes := make([]Node, 5)
	for i := range nodes {
		tts[0].arm(&nodes[i], 10)
	}
	calls := 0
	for {
		next, ok := d.RunOnce(Of(10))
		calls++
		if !ok {
			break
		}
		if next > 10 {
			t.Fatalf("RunOnce returned %d with timers still due", next)
		}
	}
	if got := fired.take(); len(got) != 5 || calls != 3 {
		t.Fatalf("fired %d in %d calls, want 5 in 3", len(got), calls)
	}
}

type sleep struct {
	until Tick
	ok    bool
}

// startObserved starts d with a hook reporting its sleeps. The hook never
// blocks the driver: when the test is not listening, the oldest reports go.
func startObserved(d *Driver) <-chan sleep {
	sleeps := make(chan sleep, 64)
	d.onSleep = func(until Tick, ok bool) {
		for {
			select {
			case sleeps <- sleep{until, ok}:
				return
			default:
				select {
				case <-sleeps:
				default:
				}
			}
		}
	}
	d.Start()
	return sleeps
}

func awaitSleep(t *testing.T, sleeps <-chan sleep, want sleep) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-sleeps:
			if s == want {
				return
			}
		case <-deadline:
			t.Fatalf("driver never went to sleep until %+v", want)
		}
	}
}

func awaitTick(t *testing.T, ch <-chan Tick, want Tick) {
	t.Helper()
	select {
	case got := <-ch:
		if got != want {
			t.Fatalf("fired %d, want %d", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("timer %d never fired", want)
	}
}

func TestDriverNotifyWakesSleeper(t *testing.T) {
	clock := NewFakeClock(0)
	d, tts := newTestDriver(clock, 2)
	fired := make(chan Tick, 4)
	for _, tt := range tts {
		tt.fire = func(n *Node, now Tick) { fired <- n.Deadline() }
	}
	var far, later, soon Node
	tts[0].arm(&far, 1_000_000_000)
	sleeps := startObserved(d)
	defer d.Stop()
	awaitSleep(t, sleeps, sleep{1_000_000_000, true})

	// A later deadline must not poke the driver.
	tts[1].arm(&later, 2_000_000_000)
	if len(d.poke) != 0 {
		t.Fatal("Notify of a later deadline poked the driver")
	}
	// An earlier one must wake it; it then expires what is due by the
	// (fake) clock, not by how long it slept.
	clock.Set(100)
	tts[1].arm(&soon, 50)
	awaitTick(t, fired, 50)
	awaitSleep(t, sleeps, sleep{1_000_000_000, true})
	if tts[0].expires.Load() != 0 {
		t.Fatal("target 0 expired before its deadline")
	}
}

// TestDriverNotifyDuringScan hits the window between the driver reading a
// target's deadline and going to sleep: the Notify comes while the driver is
// awake, so it does not poke, and the driver must find it by itself.
func TestDriverNotifyDuringScan(t *testing.T) {
	clock := NewFakeClock(0)
	d, tts := newTestDriver(clock, 2)
	fired := make(chan Tick, 4)
	tts[0].fire = func(n *Node, now Tick) { fired <- n.Deadline() }
	var far, due, soon Node
	tts[0].arm(&far, 1_000_000_000)
	tts[1].arm(&due, 0)
	// Target 1 is scanned after target 0, so this Notify lands after the
	// driver read target 0's deadline.
	tts[1].afterUnlock = func() { tts[0].arm(&soon, 10) }
	sleeps := startObserved(d)
	defer d.Stop()
	awaitSleep(t, sleeps, sleep{10, true})
	clock.Set(10)
	awaitTick(t, fired, 10)
}

func TestDriverIdleWakes(t *testing.T) {
	d, tts := newTestDriver(NewFakeClock(7), 1)
	fired := make(chan Tick, 4)
	tts[0].fire = func(n *Node, now Tick) { fired <- n.Deadline() }
	sleeps := startObserved(d)
	awaitSleep(t, sleeps, sleep{0, false})
	var n Node
	tts[0].arm(&n, 7) // due now
	awaitTick(t, fired, 7)
	awaitSleep(t, sleeps, sleep{0, false})
	d.Stop()
	d.Stop() // idempotent
}

func TestDriverLifecycle(t *testing.T) {
	d, _ := newTestDriver(NewFakeClock(0), 1)
	d.Stop() // never started: returns at once
	mustPanic(t, "Start", d.Start)

	d, _ = newTestDriver(NewMonoClock(), 0) // no targets at all
	d.Start()
	mustPanic(t, "Start", d.Start)
	d.Stop()
}

// armed is when a node of TestDriverRealClock started, and its span.
// armedNode is a timer with its start; the Node comes first, so a fired
// node converts back to it.
type armedNode struct {
	Node
	armed armed
}

type armed struct {
	at Instant
	ms int64
}

// TestDriverRealClock arms timers from several goroutines against the real
// clock while one target keeps the driver sleeping an hour ahead: every timer
// must fire (a lost wake-up would stall it for that hour), none early.
func TestDriverRealClock(t *testing.T) {
	const (
		targets = 8
		workers = 4
		perWork = 500
	)
	clock := NewMonoClock()
	d, tts := newTestDriver(clock, targets+1)
	var far Node
	tts[targets].arm(&far, clock.Now().After(3_600_000))

	var remaining atomic.Int64
	remaining.Store(workers * perWork)
	done := make(chan struct{})
	settle := func() {
		if remaining.Add(-1) == 0 {
			close(done)
		}
	}
	// armedAt is each node's start, by Owner; a node must not fire before
	// start + its span in real nanoseconds, not merely in ticks.
	var early atomic.Int64
	for _, tt := range tts[:targets] {
		tt.budget = 16
		tt.fire = func(n *Node, _ Tick) {
			a := &(*armedNode)(unsafe.Pointer(n)).armed
			if clock.Now() < a.at+Instant(a.ms)*Instant(time.Millisecond) {
				early.Add(1)
			}
			settle()
		}
	}
	d.Start()
	defer d.Stop()

	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			nodes := make([]armedNode, perWork)
			for i := range nodes {
				tt := tts[rng.IntN(targets)]
				a := &nodes[i].armed
				*a = armed{at: clock.Now(), ms: int64(rng.IntN(30))}
				tt.arm(&nodes[i].Node, a.at.After(a.ms))
				if rng.IntN(5) == 0 && tt.cancel(&nodes[i].Node) {
					settle()
				}
				if rng.IntN(50) == 0 {
					time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // spread the arming over real time
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d timers never fired", remaining.Load())
	}
	if n := early.Load(); n != 0 {
		t.Fatalf("%d timers fired early", n)
	}
}
