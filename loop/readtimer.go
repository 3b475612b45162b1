package loop

import (
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
	*timerwheel.Locked     // the server's loop driver calls its Expire
	index              int // this loop's target index in the server's driver
}

func (t *readTimer) init(lp *loopState, now timerwheel.Tick) {
	t.Locked = timerwheel.NewLocked(now,
		func(deadline timerwheel.Tick) { lp.srv.timers.Notify(t.index, deadline) },
		// Due connections are handed to the loop, which decides on its
		// own goroutine.
		func(n *timerwheel.Node) { lp.push(delivery{cs: connOf(n), kind: deliverDeadline}) })
}

// arm asks for cs's session timer at deadline, unless it is already due
// earlier (the session then asks again). Called on the loop.
func (t *readTimer) arm(cs *conn, deadline timerwheel.Tick) { t.Arm(&cs.timer, deadline) }

// stop disarms cs's node. Called on the loop when cs closes.
func (t *readTimer) stop(cs *conn) { t.Cancel(&cs.timer) }

// connOf is the conn whose timer n is: conn.timer is its first field.
func connOf(n *timerwheel.Node) *conn { return (*conn)(unsafe.Pointer(n)) }
