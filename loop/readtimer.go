package loop

import (
	"math"
	"sync"
	"unsafe"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// readTimer holds one timer node per connection of a loop: the session's
// timer (Transport.SetTimer). Sessions arm it lazily: a read only stores
// the new read deadline (a plain field write), and when the node fires
// the session compares it with the stored deadline and asks again if the
// connection made progress meanwhile. That keeps timer work off the
// request path while still closing silent connections after
// --read-timeout (spec §A.4).
type readTimer struct {
	mu        sync.Mutex // guards wheel, due, published
	lp        *loopState
	index     int // this loop's target index in the server's driver
	wheel     *timerwheel.Wheel
	due       []*conn
	published timerwheel.Tick
}

func (t *readTimer) init(lp *loopState, now timerwheel.Tick) {
	t.lp = lp
	t.wheel = timerwheel.New(now)
	t.published = math.MaxInt64
}

// arm asks for cs's session timer at deadline, unless it is already due
// earlier (the session then asks again). Called on the loop.
func (t *readTimer) arm(cs *conn, deadline timerwheel.Tick) {
	t.mu.Lock()
	if cs.timer.Armed() && cs.timer.Deadline() <= deadline {
		t.mu.Unlock()
		return
	}
	t.wheel.Reset(&cs.timer, deadline)
	notify := deadline < t.published
	if notify {
		t.published = deadline
	}
	t.mu.Unlock()
	if notify {
		t.lp.srv.timers.Notify(t.index, deadline)
	}
}

// stop disarms cs's node. Called on the loop when cs closes.
func (t *readTimer) stop(cs *conn) {
	t.mu.Lock()
	t.wheel.Cancel(&cs.timer)
	t.mu.Unlock()
}

// Expire implements timerwheel.Target for the server's loop driver: due
// connections are handed to the loop, which decides on its own goroutine.
func (t *readTimer) Expire(now timerwheel.Instant) (timerwheel.Tick, bool) {
	t.mu.Lock()
	t.wheel.Advance(now.Tick(), 0, t.collect)
	due := t.due
	t.due = nil
	next, ok := t.wheel.NextDeadline()
	if ok {
		t.published = next
	} else {
		t.published = math.MaxInt64
	}
	t.mu.Unlock()
	for _, cs := range due {
		t.lp.push(delivery{cs: cs, kind: deliverDeadline})
	}
	return next, ok
}

func (t *readTimer) collect(n *timerwheel.Node) {
	t.due = append(t.due, (*conn)(unsafe.Pointer(n))) // conn.timer is its first field
}
