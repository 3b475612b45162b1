package timerwheel

import (
	"sync/atomic"
	"time"
)

// Tick is milliseconds of monotonic time since the Clock's origin: the unit
// of wheels and deadlines.
type Tick int64

// Instant is nanoseconds of monotonic time since the Clock's origin: the
// moment a request arrived or a timer fired. Deadlines are whole Ticks, so an
// Instant is rounded once, and in the direction that keeps every timeout
// safe: down when asking whether a deadline has passed, up when computing one.
type Instant int64

const nsPerTick = Instant(time.Millisecond)

// Tick is the last whole tick at or before t (t ≥ 0). A deadline d has
// passed at t exactly when d ≤ t.Tick().
func (t Instant) Tick() Tick { return Tick(t / nsPerTick) }

// Passed reports whether deadline d has come at t.
func (t Instant) Passed(d Tick) bool { return d <= t.Tick() }

// After returns the deadline of a duration of ms milliseconds that starts at
// t: the first tick at or after t + ms. Rounding up is what makes a lease
// or timeout never end before its start plus its length: a deadline fires
// when the floored clock reaches it, which is no earlier than t + ms. (A
// truncated start would let it end up to 1 ms early.)
func (t Instant) After(ms int64) Tick {
	end := t + Instant(ms)*nsPerTick
	d := end / nsPerTick
	if end%nsPerTick > 0 {
		d++
	}
	return Tick(d)
}

// Of returns the instant at which tick d begins.
func Of(d Tick) Instant { return Instant(d) * nsPerTick }

// Clock gives monotonic instants.
type Clock interface {
	Now() Instant
}

// MonoClock reads Go's monotonic clock, so wall-clock steps (NTP, an
// operator's date command) never move a deadline.
type MonoClock struct {
	origin time.Time
}

// NewMonoClock returns a clock whose Now is 0 at creation.
func NewMonoClock() *MonoClock {
	return &MonoClock{origin: time.Now()}
}

// Now returns the nanoseconds since creation.
func (c *MonoClock) Now() Instant {
	return Instant(time.Since(c.origin))
}

// FakeClock is a Clock moved by hand, for tests. It is safe for concurrent
// use; unlike a real clock it may be Set backwards, to test monotonic guards.
// The zero value reads 0. Set and Add move it by whole ticks; SetInstant
// places it anywhere inside one.
type FakeClock struct {
	t atomic.Int64 // nanoseconds
}

// NewFakeClock returns a FakeClock reading the start of tick start.
func NewFakeClock(start Tick) *FakeClock {
	c := &FakeClock{}
	c.Set(start)
	return c
}

// Set moves the clock to the start of tick t.
func (c *FakeClock) Set(t Tick) { c.t.Store(int64(Of(t))) }

// SetInstant moves the clock to t.
func (c *FakeClock) SetInstant(t Instant) { c.t.Store(int64(t)) }

// Add moves the clock by d ticks.
func (c *FakeClock) Add(d Tick) { c.t.Add(int64(Of(d))) }

// Now returns the clock's reading.
func (c *FakeClock) Now() Instant { return Instant(c.t.Load()) }
