package loop

import (
	"github.com/valyala/bytebufferpool"

	"github.com/dflockd-ng/dflockd/session"
)

// Output held while a loop applies deliveries. gnet's Write outside
// OnTraffic goes straight to the socket: one write(2) per call. A cluster
// member's session is owed up to maxOwed answers, which an applied log
// entry hands back one Post each; written as they came, a connection at
// depth 16 cost 16 system calls per entry where one carries them all
// (PERF.md, "Cluster mode"). So while the inbox is applied, a
// connection's writes are held in a pooled buffer, in order, and each
// connection that wrote is flushed once when the batch ends, then told
// (Session.Flushed) so that what its socket did not take starts the
// write deadline. A connection's Close sends what it holds first.
//
// Held bytes are not Unsent: they are on their way to the socket within
// this batch, and counting them would arm a write deadline for every
// held answer. A connection holding PushBudget bytes is flushed at once,
// so that a burst of pushes reaches the socket, and the slow-consumer
// bound sees the socket's state, as without holding.

// hold appends b to cs's held output, registering cs for the flush.
func (lp *loopState) hold(cs *conn, b []byte) {
	if cs.held == nil {
		cs.held = bytebufferpool.Get()
		lp.holding = append(lp.holding, cs)
	}
	cs.held.B = append(cs.held.B, b...)
	if len(cs.held.B) >= session.PushBudget {
		cs.writeHeld()
	}
}

// flushHeld ends holding: every connection that held output writes it
// and hears so.
func (lp *loopState) flushHeld() {
	lp.batching = false
	for i, cs := range lp.holding {
		cs.writeHeld()
		if cs.held != nil {
			bytebufferpool.Put(cs.held)
			cs.held = nil
		}
		if !cs.closed {
			cs.sess.Flushed()
		}
		lp.holding[i] = nil
	}
	if cap(lp.holding) > keepDeliveries {
		lp.holding = nil
	}
	lp.holding = lp.holding[:0]
}

// writeHeld writes what cs holds to its socket (dropped if it closed
// meanwhile) and keeps the buffer for more.
func (cs *conn) writeHeld() {
	if cs.held == nil || len(cs.held.B) == 0 {
		return
	}
	if !cs.closed {
		cs.send(cs.held.B)
	}
	cs.held.B = cs.held.B[:0]
}
