package httpapi

import (
	"math"
	"sync"
	"unsafe"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Kinds of the API's timer nodes (timerwheel.Node.Kind): what record a
// fired node is the first field of.
const (
	kindSession uint8 = iota + 1 // *httpSession: its idle expiry
	kindAlarm                    // *alarm: a delayed answer (failed auth)
	kindSweep                    // *rateLimiter: dropping idle per-IP buckets
)

// timers is the API's one timer wheel, on the hub's clock, advanced by a
// timerwheel.Driver of its own: every deadline of the HTTP side (session
// idle expiry, the 100 ms before a 401, the rate limiter's housekeeping)
// is a node in it, as the engine's leases and the loops' read deadlines
// are in theirs. So a thousand idle sessions cost a thousand list
// entries, not a thousand runtime timers.
//
// Nodes fire on the driver's goroutine, outside the wheel's lock: a fired
// session may close its engine session, which routes effects.
type timers struct {
	mu        sync.Mutex // guards wheel, due, published
	wheel     *timerwheel.Wheel
	due       []*timerwheel.Node
	published timerwheel.Tick // earliest deadline the driver was told of
	clock     timerwheel.Clock
	driver    *timerwheel.Driver
	fire      func(n *timerwheel.Node) // called for each fired node, unlocked
}

func newTimers(clock timerwheel.Clock, fire func(*timerwheel.Node)) *timers {
	t := &timers{
		wheel:     timerwheel.New(clock.Now().Tick()),
		published: math.MaxInt64,
		clock:     clock,
		fire:      fire,
	}
	t.driver = timerwheel.NewDriver(clock, []timerwheel.Target{t})
	return t
}

// arm (re)arms n to fire at deadline.
func (t *timers) arm(n *timerwheel.Node, deadline timerwheel.Tick) {
	t.armUnless(n, deadline, never)
}

func never() bool { return false }

// armUnless arms n to fire at deadline unless stop reports true, checked
// under the timers' lock: an owner that sets what stop reads before it
// cancels n (with that lock) never finds n armed again after its cancel.
func (t *timers) armUnless(n *timerwheel.Node, deadline timerwheel.Tick, stop func() bool) {
	t.mu.Lock()
	if stop() {
		t.mu.Unlock()
		return
	}
	t.wheel.Reset(n, deadline)
	notify := deadline < t.published
	if notify {
		t.published = deadline
	}
	t.mu.Unlock()
	if notify {
		t.driver.Notify(0, deadline)
	}
}

// armIdle arms n unless it is armed already: for housekeeping that only
// needs to run some time after it is first needed.
func (t *timers) armIdle(n *timerwheel.Node, deadline timerwheel.Tick) {
	t.mu.Lock()
	armed := n.Armed()
	t.mu.Unlock()
	if !armed {
		t.arm(n, deadline)
	}
}

// cancel disarms n; a node that already fired (or is firing) is left
// alone, so owners need not know which.
func (t *timers) cancel(n *timerwheel.Node) {
	t.mu.Lock()
	t.wheel.Cancel(n)
	t.mu.Unlock()
}

// Expire implements timerwheel.Target: it fires the nodes due by now.
func (t *timers) Expire(now timerwheel.Instant) (timerwheel.Tick, bool) {
	t.mu.Lock()
	t.wheel.Advance(now.Tick(), 0, t.collect)
	due := t.due
	t.due = nil
	next, ok := t.wheel.NextDeadline()
	t.published = math.MaxInt64
	if ok {
		t.published = next
	}
	t.mu.Unlock()
	for _, n := range due {
		t.fire(n)
	}
	return next, ok
}

func (t *timers) collect(n *timerwheel.Node) { t.due = append(t.due, n) }

// runDue fires what is due at the clock's time now, on the caller's
// goroutine: tests on a fake clock call it after moving the clock.
func (t *timers) runDue() { t.driver.RunOnce(t.clock.Now()) }

// alarm is a one-shot wake-up: ring is closed when its node fires.
type alarm struct {
	node timerwheel.Node // first field: fired nodes are converted back
	ring chan struct{}
}

// after returns an alarm that rings ms milliseconds from now. The caller
// cancels it if it stops waiting first.
func (t *timers) after(ms int64) *alarm {
	a := &alarm{node: timerwheel.Node{Kind: kindAlarm}, ring: make(chan struct{})}
	t.arm(&a.node, t.clock.Now().After(ms))
	return a
}

// The records a node is the first field of.
func alarmOf(n *timerwheel.Node) *alarm         { return (*alarm)(unsafe.Pointer(n)) }
func sessionOf(n *timerwheel.Node) *httpSession { return (*httpSession)(unsafe.Pointer(n)) }
func limiterOf(n *timerwheel.Node) *rateLimiter { return (*rateLimiter)(unsafe.Pointer(n)) }
