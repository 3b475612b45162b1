package httpapi

import (
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
// Nodes are armed with Reset (a new deadline replaces the old) and fire
// on the driver's goroutine, outside the wheel's lock: a fired session may
// close its engine session, which routes effects.
type timers struct {
	*timerwheel.Locked
	clock  timerwheel.Clock
	driver *timerwheel.Driver
}

// newTimers returns the API's timers; fire is called for each fired node.
func newTimers(clock timerwheel.Clock, fire func(*timerwheel.Node)) *timers {
	t := &timers{clock: clock}
	t.Locked = timerwheel.NewLocked(clock.Now().Tick(),
		func(deadline timerwheel.Tick) { t.driver.Notify(0, deadline) }, fire)
	t.driver = timerwheel.NewDriver(clock, []timerwheel.Target{t.Locked})
	return t
}

// armIdle arms n unless it is armed already: for housekeeping that only
// needs to run some time after it is first needed.
func (t *timers) armIdle(n *timerwheel.Node, deadline timerwheel.Tick) {
	if !t.Armed(n) {
		t.Reset(n, deadline)
	}
}

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
	t.Reset(&a.node, t.clock.Now().After(ms))
	return a
}

// The records a node is the first field of.
func alarmOf(n *timerwheel.Node) *alarm         { return (*alarm)(unsafe.Pointer(n)) }
func sessionOf(n *timerwheel.Node) *httpSession { return (*httpSession)(unsafe.Pointer(n)) }
func limiterOf(n *timerwheel.Node) *rateLimiter { return (*rateLimiter)(unsafe.Pointer(n)) }
