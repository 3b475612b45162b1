package timerwheel

import (
	"sync/atomic"
	"time"
)

// Tick is milliseconds of monotonic time since the Clock's origin.
type Tick int64

// Clock gives monotonic ticks.
type Clock interface {
	Now() Tick
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

// Now returns whole milliseconds since creation. Truncation keeps it safe for
// timers: a deadline reached by Now has really elapsed.
func (c *MonoClock) Now() Tick {
	return Tick(time.Since(c.origin) / time.Millisecond)
}

// FakeClock is a Clock moved by hand, for tests. It is safe for concurrent
// use; unlike a real clock it may be Set backwards, to test monotonic guards.
// The zero value reads 0.
type FakeClock struct {
	t atomic.Int64
}

// NewFakeClock returns a FakeClock reading start.
func NewFakeClock(start Tick) *FakeClock {
	c := &FakeClock{}
	c.t.Store(int64(start))
	return c
}

// Set moves the clock to t.
func (c *FakeClock) Set(t Tick) { c.t.Store(int64(t)) }

// Add moves the clock by d.
func (c *FakeClock) Add(d Tick) { c.t.Add(int64(d)) }

// Now returns the clock's reading.
func (c *FakeClock) Now() Tick { return Tick(c.t.Load()) }
