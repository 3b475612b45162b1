package fence

import (
	"fmt"
	"time"
)

// run is the persister goroutine: one per durable allocator. It alone
// writes the file after Open, raises the ceiling and moves the trigger.
func (a *Allocator) run() {
	defer close(a.done)
	// stateFile.write sets debug.SetPanicOnFault around its stores, so a
	// SIGBUS on the mapping (file truncated behind our back, I/O error)
	// becomes a persist error here instead of killing the process.
	for {
		select {
		case <-a.stop:
			return
		case <-a.poke:
		}
		if a.closed.Load() {
			return // Close is waiting for us; persist nothing more
		}
		if !a.reserve() {
			return
		}
	}
}

// reserve makes the next window durable and publishes it. It reports
// false after a failure, which ends fence issuance.
func (a *Allocator) reserve() bool {
	v := a.ctr.Load()
	if v < a.lo {
		v = maxFence // the counter wrapped: nothing left to reserve for
	}
	c := a.ceil.Load()
	if c == maxFence {
		return true // saturated: every remaining fence is already covered
	}
	if v < a.trig.Load() {
		return true // a stale poke: the last persist already covers v
	}
	// While this persist is in flight every fence below the current
	// ceiling is safe to hand out: let Next take its fast path up to the
	// ceiling instead of re-poking us on every call.
	a.trig.Store(c)
	// Reserve from the counter (a burst may have run far past the
	// ceiling) or from the ceiling, whichever is higher, so each persist
	// buys at least a full window.
	r := record{seq: a.seq.Load() + 1, ceiling: addSat(max(v, c), a.window)}
	start := time.Now()
	if err := a.file.write(r); err != nil {
		a.fail(r, err)
		return false
	}
	a.notePersisted(r, time.Since(start))
	a.broadcast()
	return true
}

// notePersisted publishes a durable record: the ceiling first, then the
// trigger, so a Next that sees the new trigger also sees a ceiling at
// least as high (trig ≤ ceil at every instant). d is how long the persist
// took, 0 for Open's.
func (a *Allocator) notePersisted(r record, d time.Duration) {
	a.seq.Store(r.seq)
	a.ceil.Store(r.ceiling)
	a.trig.Store(a.trigger(r.ceiling))
	a.persists.Add(1)
	if d > 0 {
		a.lastDur.Store(int64(d))
		a.maxDur.Store(max(a.maxDur.Load(), int64(d))) // only the persister writes
	}
}

// trigger is the counter value at which the next window is reserved:
// half a window before the ceiling, so the persister has W/2 grants'
// worth of time to finish before anyone has to wait.
func (a *Allocator) trigger(ceiling uint64) uint64 {
	if ceiling == maxFence {
		return maxFence // nothing further can be reserved
	}
	if ceiling-a.lo < a.window/2 {
		return a.lo // every Next pokes until the persister catches up
	}
	return ceiling - a.window/2
}

// fail stops fence issuance forever and says so once, loudly.
func (a *Allocator) fail(r record, cause error) {
	err := fmt.Errorf("%w: %s: record seq %d ceiling %d: %w", ErrPersist, a.path, r.seq, r.ceiling, cause)
	a.failed.Store(&err)
	a.trig.Store(a.lo)
	a.logf("%v; no further fences will be issued (grants fail) until restart", err)
	a.broadcast()
}

// wake asks the persister for the next window without blocking; a full
// channel means a request is already pending.
func (a *Allocator) wake() {
	select {
	case a.poke <- struct{}{}:
	default:
	}
}

// broadcast wakes stalled Next calls to re-check the ceiling or the stop state.
func (a *Allocator) broadcast() {
	a.mu.Lock()
	a.cond.Broadcast()
	a.mu.Unlock()
}
