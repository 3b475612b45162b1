package loop

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
)

// deliveryKind says what a queued delivery asks of its connection.
type deliveryKind uint8

const (
	deliverResult   deliveryKind = iota // write the result and unblock
	deliverDeadline                     // the read deadline may have passed
	// deliverPeerClosed: the peer of a paused connection went
	// (peerwatch_linux.go); watch is the registration that saw it.
	deliverPeerClosed
	// deliverHangup closes the connection after what was queued before
	// (Server.Hangup).
	deliverHangup
)

type delivery struct {
	cs     *conn
	kind   deliveryKind
	watch  uint32
	result engine.Result
}

// loopState is what belongs to one gnet event loop.
type loopState struct {
	srv *Server
	el  gnet.EventLoop
	// inbox takes deliveries from any goroutine. scheduled is true while a
	// drain task is posted, so a burst costs one Execute, not one each.
	// inTraffic is true while the loop runs OnTraffic: the loop drains the
	// inbox itself before returning, so nothing needs posting. That makes a
	// hand-off between two connections of one loop (the common case on
	// small hosts) cost no task and no eventfd wake.
	inbox struct {
		sync.Mutex
		items     []delivery
		scheduled bool
		inTraffic bool
	}
	// pushBytes is the size of the pushes waiting in the inbox. A
	// session's Input yields once it passes session.PushBudget, so that a
	// pipelined burst of signals reaches this loop's receivers in slices
	// (and their backlog figures stay true) instead of all at the end of
	// the burst.
	pushBytes atomic.Int64
	// traffic counts OnTraffic calls, for the idle memory release
	// (release.go); only this loop writes it.
	traffic atomic.Uint64
	// Loop-confined below.
	spare    []delivery       // the other half of the inbox double buffer
	scratch  session.Scratch  // the sessions' working memory (one call at a time)
	counters session.Counters // this loop's request counts, if Config.Count
	dirty    []*conn          // connections with pushes batched by this drain
	// batching is true while apply runs: connections' writes are held
	// (held.go), and holding lists those that hold some.
	batching bool
	holding  []*conn
	drain    gnet.Runnable
	rt       readTimer
	pauser   readPauser // stops reading sockets whose output is over the bound
}

func newLoopState(s *Server, el gnet.EventLoop) *loopState {
	lp := &loopState{srv: s, el: el}
	lp.pauser.notGnet = s.watch.fd()
	lp.scratch.Out = make([]byte, 0, 4096)
	if s.cfg.Count {
		lp.scratch.Counters = &lp.counters
		s.hub.RegisterCounters(&lp.counters)
	}
	lp.drain = gnet.RunnableFunc(lp.drainInbox)
	lp.rt.init(lp, s.clock.Now().Tick())
	return lp
}

// push queues a delivery for a connection of this loop. It may be called
// with a shard lock held, so it only appends and posts.
func (lp *loopState) push(d delivery) {
	if d.result.Kind == engine.KindPush {
		lp.pushBytes.Add(pushSize(&d.result))
	}
	lp.inbox.Lock()
	lp.inbox.items = append(lp.inbox.items, d)
	post := !lp.inbox.scheduled && !lp.inbox.inTraffic
	if post {
		lp.inbox.scheduled = true
	}
	lp.inbox.Unlock()
	if post {
		// Execute fails only once the engine is stopping; the connection
		// is being closed then and its cleanup has run or will run.
		_ = lp.el.Execute(context.Background(), lp.drain)
	}
}

// beginTraffic marks the loop as inside OnTraffic (see inbox.inTraffic).
func (lp *loopState) beginTraffic() {
	lp.inbox.Lock()
	lp.inbox.inTraffic = true
	lp.inbox.Unlock()
}

// endTraffic leaves OnTraffic and applies what was queued meanwhile. A
// drain task posted before may still run; it then finds nothing.
func (lp *loopState) endTraffic() {
	lp.inbox.Lock()
	lp.inbox.inTraffic = false
	items := lp.inbox.items
	if len(items) > 0 {
		lp.inbox.items = lp.spare[:0]
	}
	lp.inbox.Unlock()
	if len(items) > 0 {
		lp.apply(items)
	}
}

// drainInbox runs on the loop as a posted task and applies every queued
// delivery.
func (lp *loopState) drainInbox(context.Context) error {
	lp.inbox.Lock()
	items := lp.inbox.items
	lp.inbox.items = lp.spare[:0]
	lp.inbox.scheduled = false
	lp.inbox.Unlock()
	lp.apply(items)
	return nil
}

// apply runs deliveries on the loop, then keeps the slice for reuse.
func (lp *loopState) apply(items []delivery) {
	lp.batching = true
	for i := range items {
		d := &items[i]
		if d.result.Kind == engine.KindPush {
			lp.pushBytes.Add(-pushSize(&d.result))
		}
		switch d.kind {
		case deliverResult:
			if d.cs.sess.Deliver(d.result) {
				lp.dirty = append(lp.dirty, d.cs)
			}
		case deliverDeadline:
			d.cs.sess.Timer()
		case deliverPeerClosed:
			// A report for an earlier pause is stale: a new watch
			// reports the same going again if it is still true.
			// Reading stays paused: the session closes the connection
			// once its answers are written, or, if it owes none, sees
			// the EOF when it reads again.
			if !d.cs.closed && d.watch == d.cs.watch {
				d.cs.sess.PeerClosed()
			}
		case deliverHangup:
			if !d.cs.closed {
				d.cs.Close()
			}
		}
		*d = delivery{}
	}
	if cap(items) > keepDeliveries {
		items = nil // a burst's inbox is not kept
	}
	lp.spare = items[:0]
	for i, cs := range lp.dirty {
		cs.sess.FlushPushes()
		lp.dirty[i] = nil
	}
	if cap(lp.dirty) > keepDeliveries {
		lp.dirty = nil
	}
	lp.dirty = lp.dirty[:0]
	lp.flushHeld()
	lp.scratch.Trim()
}

// keepDeliveries bounds the inbox buffers a loop keeps between drains
// (each entry 152 bytes): a signal to thousands of this loop's receivers
// allocates its own and lets it go.
const keepDeliveries = 1024

// pushSize is what a push costs the inbox's push budget.
func pushSize(r *engine.Result) int64 { return int64(len(r.Push.A) + len(r.Push.B) + 16) }
