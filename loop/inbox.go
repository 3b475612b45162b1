package loop

import (
	"context"
	"sync"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
)

// deliveryKind says what a queued delivery asks of its connection.
type deliveryKind uint8

const (
	deliverResult   deliveryKind = iota // write the result and unblock
	deliverDeadline                     // the read deadline may have passed
)

type delivery struct {
	cs     *conn
	kind   deliveryKind
	result engine.Result
}

// loopState is what belongs to one gnet event loop.
type loopState struct {
	srv *Server
	el  gnet.EventLoop
	// inbox takes deliveries from any goroutine. scheduled is true while a
	// drain task is posted, so a burst costs one Execute, not one each.
	inbox struct {
		sync.Mutex
		items     []delivery
		scheduled bool
	}
	// Loop-confined below.
	spare []delivery // the other half of the inbox double buffer
	out   []byte     // reply scratch reused across reads
	drain gnet.Runnable
	rt    readTimer
}

func newLoopState(s *Server, el gnet.EventLoop) *loopState {
	lp := &loopState{srv: s, el: el, out: make([]byte, 0, 4096)}
	lp.drain = gnet.RunnableFunc(lp.drainInbox)
	lp.rt.init(lp, s.clock.Now())
	return lp
}

// push queues a delivery for a connection of this loop. It may be called
// with a shard lock held, so it only appends and posts.
func (lp *loopState) push(d delivery) {
	lp.inbox.Lock()
	lp.inbox.items = append(lp.inbox.items, d)
	post := !lp.inbox.scheduled
	lp.inbox.scheduled = true
	lp.inbox.Unlock()
	if post {
		// Execute fails only once the engine is stopping; the connection
		// is being closed then and its cleanup has run or will run.
		_ = lp.el.Execute(context.Background(), lp.drain)
	}
}

// drainInbox runs on the loop and applies every queued delivery.
func (lp *loopState) drainInbox(context.Context) error {
	lp.inbox.Lock()
	items := lp.inbox.items
	lp.inbox.items = lp.spare[:0]
	lp.inbox.scheduled = false
	lp.inbox.Unlock()
	for i := range items {
		d := &items[i]
		switch d.kind {
		case deliverResult:
			d.cs.deliver(d.result)
		case deliverDeadline:
			d.cs.checkDeadline()
		}
		*d = delivery{}
	}
	lp.spare = items[:0]
	return nil
}
