package loop

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Push bounds (spec §B.9: dflockd keeps 64 pushes, up to ~33 KiB, per
// connection). A connection whose socket has not taken pushSkip bytes is
// behind: queue groups pass it over and a signal does not count it as a
// receiver. Pushes still queued in its loop's inbox count only towards
// twice that: they measure how busy the loop is more than the peer. One
// whose output passes pushCut is disconnected as a slow consumer: its
// subscriptions, waits and holds are cleaned up as for any disconnect, and
// other receivers never wait for it. The gap between the bounds absorbs
// the pushes already on their way when a connection was found behind.
const (
	pushSkip = 64 << 10
	pushCut  = 4 * pushSkip
	// pushBudget bounds the pushes a loop lets pile up in its inbox while
	// serving one connection's input, and a connection's push batch.
	pushBudget = 16 << 10
)

// A connection with unsent output refreshes its backlog figure now and
// then: gnet flushes on writability without telling us, so without a look
// a drained subscriber would keep looking full to queue-group member
// choice. The first look comes after recheckFirst; a peer that stays
// stuck is looked at less and less often, up to recheckMax apart.
const (
	recheckFirst = 10   // ms
	recheckMax   = 1000 // ms
)

// pushBacklog is what a signal on another goroutine may know about a
// connection's unread output — bytes of pushes queued for it and not yet
// written, and what the socket had not taken when the loop last looked
// (gnet's buffers may only be read on their loop) — plus the loop-confined
// push batch.
type pushBacklog struct {
	queued    atomic.Int64
	unsent    atomic.Int64
	batch     []byte // pushes of the current inbox drain, one write
	dirty     bool   // on the loop's list of batches to flush
	recheckMs int64  // the armed recheck's interval; 0 = none armed
}

// Backlogged implements engine.Notifier: is sess behind (see pushSkip)?
// Queue groups then try their next member (spec §B.9).
func (s *Server) Backlogged(sess *engine.Session) bool {
	cs, ok := sess.Owner.(*conn)
	if !ok {
		return false
	}
	unsent := cs.backlog.unsent.Load()
	return unsent > pushSkip || unsent+cs.backlog.queued.Load() > 2*pushSkip
}

// push adds an asynchronous line (sig …, watch …, leader …) to the
// connection's batch, which the loop writes once its inbox is drained, so
// a fan-out costs one write per receiver and drain, not one per line. A
// peer that has fallen pushCut behind is disconnected instead.
func (cs *conn) push(line string) {
	n := int64(len(line) + 1)
	if cs.closed || cs.closing {
		cs.backlog.queued.Add(-n)
		return
	}
	if cs.c.OutboundBuffered() > pushCut {
		cs.backlog.queued.Add(-n)
		cs.closing = true
		_ = cs.c.Close()
		return
	}
	cs.backlog.batch = append(cs.backlog.batch, line...)
	cs.backlog.batch = append(cs.backlog.batch, '\n')
	if len(cs.backlog.batch) >= pushBudget {
		cs.flushPushes() // let the socket take it before the bound is checked again
		return
	}
	if !cs.backlog.dirty {
		cs.backlog.dirty = true
		cs.lp.dirty = append(cs.lp.dirty, cs)
	}
}

// flushPushes writes the connection's push batch. Replies call it first,
// so a reply never overtakes a push queued before it.
func (cs *conn) flushPushes() {
	b := cs.backlog.batch
	if len(b) == 0 {
		return
	}
	if !cs.closed && !cs.closing {
		cs.write(b)
		if cs.c.OutboundBuffered() > 0 && cs.backlog.recheckMs == 0 {
			cs.backlog.recheckMs = recheckFirst
			cs.lp.rt.arm(cs, cs.srv.clock.Now().After(recheckFirst))
		}
	}
	// After the write has been noted in unsent: a reader may count these
	// bytes twice for a moment, but never misses them.
	cs.backlog.queued.Add(-int64(len(b)))
	if cap(b) > pushSkip {
		b = nil // a burst's buffer is not kept per connection
	}
	cs.backlog.batch = b[:0]
}

// noteUnsent publishes how much output the socket has not taken yet.
func (cs *conn) noteUnsent() {
	n := int64(cs.c.OutboundBuffered())
	if cs.backlog.unsent.Load() != n {
		cs.backlog.unsent.Store(n)
	}
}

// recheckBacklog runs with the connection's timer: it refreshes the
// backlog figure and, while output is still unsent after a push, keeps a
// recheck armed before next.
func (cs *conn) recheckBacklog(now timerwheel.Instant, next timerwheel.Tick) timerwheel.Tick {
	if cs.backlog.recheckMs == 0 {
		return next
	}
	cs.noteUnsent()
	if cs.c.OutboundBuffered() == 0 {
		cs.backlog.recheckMs = 0
		return next
	}
	cs.backlog.recheckMs = min(2*cs.backlog.recheckMs, recheckMax)
	return min(next, now.After(cs.backlog.recheckMs))
}
