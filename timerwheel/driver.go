package timerwheel

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// never is the published deadline of a target with nothing armed.
	never = math.MaxInt64
	// awake is sleepUntil while the driver is not sleeping: no Notify pokes
	// it, because it rescans every target before it sleeps again.
	awake = math.MinInt64
	// maxSleep bounds one sleep so the deadline arithmetic never overflows
	// a time.Duration; waking once an hour to find nothing due is free.
	maxSleep = time.Hour
)

// Target owns a wheel and the lock guarding it (a shard, or a loop's timer
// set).
type Target interface {
	// Expire locks the target, advances its wheel to now.Tick() (firing
	// due timers), and returns the target's next deadline (ok=false if
	// none). now is the exact instant, for what the fired timers start
	// (a lease granted on an expiry runs from now, rounded up). A next at
	// or before now.Tick() asks to be called again at once, e.g. when a
	// firing budget ran out. Called only by the driver, one call at a
	// time.
	Expire(now Instant) (next Tick, ok bool)
}

// Driver is the single goroutine that advances many guarded wheels. It is
// tickless: it sleeps until the earliest deadline its targets published and
// is poked awake only by a Notify earlier than that.
//
// Protocol, and why no deadline is lost:
//   - Notify lowers target i's published deadline with a compare-and-swap,
//     never raises it, then pokes the driver if the deadline is earlier than
//     sleepUntil (the driver's wake-up time, or "awake" while it scans).
//   - To expire target i, the driver clears its published deadline before
//     calling Expire and afterwards merges Expire's answer by minimum. A
//     Notify overwritten by the clearing happened before Expire took the
//     target's lock, so Expire saw that timer; a Notify after it survives
//     the merge.
//   - Before sleeping the driver stores sleepUntil and then reads every
//     published deadline again. A racing Notify either stored its deadline
//     before that read (the driver sees it and does not sleep) or reads
//     sleepUntil after the store (and pokes).
type Driver struct {
	clock      Clock
	targets    []Target
	published  []publishedDeadline
	sleepUntil atomic.Int64
	// poke has one slot: one pending wake-up is as good as many.
	poke chan struct{}
	// runMu serialises iterations, so tests may call RunOnce while the
	// goroutine is not running without caring whether it ever was.
	runMu sync.Mutex
	life  struct {
		sync.Mutex
		started, stopped bool
	}
	stop chan struct{}
	done chan struct{}
	// onSleep, if set before Start, is called with the wake-up time just
	// before each sleep; tests use it to know the driver is asleep.
	onSleep func(until Tick, ok bool)
}

// publishedDeadline is padded to a cache line: targets Notify from
// different cores and should not contend on each other's deadline.
type publishedDeadline struct {
	v atomic.Int64
	_ [56]byte
}

// NewDriver returns a driver for targets; target i is the one that calls
// Notify(i, ...). The driver does not run until Start. A deadline of
// math.MaxInt64 means "never" to the driver.
func NewDriver(clock Clock, targets []Target) *Driver {
	d := &Driver{
		clock:     clock,
		targets:   targets,
		published: make([]publishedDeadline, len(targets)),
		poke:      make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	for i := range d.published {
		d.published[i].v.Store(never)
	}
	// Until Start the driver counts as awake: its first iteration scans
	// everything, so Notify need not poke.
	d.sleepUntil.Store(awake)
	return d
}

// Notify tells the driver that target i has a timer due at deadline. Targets
// call it after Add or Reset when the deadline is earlier than the one they
// last published (or that Expire last returned); calling it otherwise is
// harmless. Safe from any goroutine and cheap: a load and usually one
// compare-and-swap, plus a non-blocking channel send only when the driver
// sleeps past deadline.
func (d *Driver) Notify(i int, deadline Tick) {
	p := &d.published[i].v
	dl := int64(deadline)
	for {
		cur := p.Load()
		if dl >= cur {
			// The driver already knows an earlier deadline for this
			// target, so it wakes early enough.
			return
		}
		if p.CompareAndSwap(cur, dl) {
			break
		}
	}
	if dl < d.sleepUntil.Load() {
		select {
		case d.poke <- struct{}{}:
		default:
		}
	}
}

// RunOnce is one iteration of the driver: it calls Expire(now) on every
// target whose published deadline is at or before now, records their next
// deadlines, and returns the earliest published deadline (ok=false if none).
// The driver goroutine calls it on every wake; tests with a FakeClock call
// it directly instead of Start to drive expiry deterministically.
func (d *Driver) RunOnce(now Instant) (next Tick, ok bool) {
	d.runMu.Lock()
	defer d.runMu.Unlock()
	earliest := int64(never)
	for i := range d.published {
		p := &d.published[i].v
		if p.Load() <= int64(now.Tick()) {
			p.Store(never)
			if t, ok := d.targets[i].Expire(now); ok {
				lower(p, int64(t))
			}
		}
		if v := p.Load(); v < earliest {
			earliest = v
		}
	}
	if earliest == never {
		return 0, false
	}
	return Tick(earliest), true
}

// lower sets *p to min(*p, v).
func lower(p *atomic.Int64, v int64) {
	for {
		cur := p.Load()
		if v >= cur || p.CompareAndSwap(cur, v) {
			return
		}
	}
}

// earliest is the minimum published deadline.
func (d *Driver) earliest() int64 {
	m := int64(never)
	for i := range d.published {
		if v := d.published[i].v.Load(); v < m {
			m = v
		}
	}
	return m
}

// Start starts the driver goroutine. It panics if called twice or after Stop.
func (d *Driver) Start() {
	d.life.Lock()
	defer d.life.Unlock()
	if d.life.started || d.life.stopped {
		panic("timerwheel: Driver.Start called twice or after Stop")
	}
	d.life.started = true
	go d.run()
}

// Stop stops the driver goroutine and waits for it to exit. Timers due later
// do not fire. Stop is idempotent and may be called without Start.
func (d *Driver) Stop() {
	d.life.Lock()
	if d.life.stopped {
		d.life.Unlock()
		return
	}
	d.life.stopped = true
	started := d.life.started
	close(d.stop)
	d.life.Unlock()
	if started {
		<-d.done
	}
}

func (d *Driver) run() {
	defer close(d.done)
	timer := time.NewTimer(maxSleep)
	timer.Stop()
	for {
		select {
		case <-d.stop:
			return
		default:
		}
		now := d.clock.Now()
		next, ok := d.RunOnce(now)
		if ok && now.Passed(next) {
			// A budget ran out, or a deadline passed during the
			// scan: go again, having released every target's lock.
			continue
		}
		until := int64(never)
		if ok {
			until = int64(next)
		}
		d.sleepUntil.Store(until)
		if d.earliest() < until {
			// A Notify raced with the scan and may have skipped its
			// poke; see the protocol on Driver.
			d.sleepUntil.Store(awake)
			continue
		}
		if d.onSleep != nil {
			d.onSleep(next, ok)
		}
		var fired <-chan time.Time
		if ok {
			// Sleep to the start of the deadline's tick, not a whole
			// number of ticks from now: the tick is reached no earlier.
			wait := maxSleep
			if ns := Of(next) - now; ns < Instant(maxSleep) {
				wait = time.Duration(ns)
			}
			timer.Reset(wait)
			fired = timer.C
		}
		select {
		case <-d.stop:
			timer.Stop()
			return
		case <-d.poke:
		case <-fired:
		}
		timer.Stop()
		d.sleepUntil.Store(awake)
		// A poke sent after the wake-up would only cause a spurious
		// rescan; its deadline is already visible to the next scan.
		select {
		case <-d.poke:
		default:
		}
	}
}
