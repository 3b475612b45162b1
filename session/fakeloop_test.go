package session

import (
	"net"
	"sync"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// A fake event loop for parallel benchmarks: several goroutines drive
// sessions of one shared Hub at once, as package loop's gnet loops do.
// Each fakeLoop belongs to one goroutine and owns what a loop owns: its
// connections, its Scratch, and an inbox that other goroutines fill
// through Post (loop/inbox.go). fakeConn and fakeServer are single
// goroutine by design (one Scratch, shared wake and close lists), so they
// cannot serve here.

// fakeLoop is one loop goroutine's state.
type fakeLoop struct {
	hub     *Hub
	scratch Scratch
	conns   []*loopConn
	// inbox is what other goroutines Post for this loop's connections
	// (loop/inbox.go): a Post outside traffic schedules a drain, here by
	// a token in wake, which the loop's goroutine waits for when idle as
	// a gnet loop sleeps in epoll_wait until Execute wakes it.
	inbox struct {
		sync.Mutex
		items     []loopDelivery
		scheduled bool
		inTraffic bool
	}
	wake  chan struct{}
	spare []loopDelivery // the other half of the inbox double buffer
	// delivered lists the connections apply delivered to, in order, for
	// the caller to inspect (and clear).
	delivered []*loopConn
}

// loopDelivery is a result Post queued for one of the loop's connections.
type loopDelivery struct {
	c *loopConn
	r engine.Result
}

func newFakeLoop(h *Hub) *fakeLoop {
	lp := &fakeLoop{hub: h, wake: make(chan struct{}, 1)}
	lp.scratch.Out = make([]byte, 0, 4096) // as loop.newLoopState
	return lp
}

// loopConn is a connection of a fakeLoop: a Transport over byte slices
// whose methods, Post aside, run on the loop's goroutine.
type loopConn struct {
	lp     *fakeLoop
	idx    int // position in lp.conns
	sess   *Session
	out    []byte // what the peer received since the test last cleared it
	woken  bool
	closed bool
}

// open connects a new dflockd session on this loop. Like gnet's OnOpen it
// runs on the loop's goroutine, or before the loop starts.
func (lp *fakeLoop) open() *loopConn {
	c := &loopConn{lp: lp, idx: len(lp.conns)}
	c.sess = lp.hub.Open(c, Dflockd, Peer{Addr: c.RemoteAddr(), HalfOpen: c.HalfOpen()})
	lp.conns = append(lp.conns, c)
	return c
}

// traffic is one OnTraffic: the session consumes in, then the loop applies
// what other goroutines posted meanwhile and trims its scratch, as
// loop.Server.OnTraffic does. It returns the bytes consumed and whether
// the session asked for a close.
func (lp *fakeLoop) traffic(c *loopConn, in []byte) (int, bool) {
	lp.inbox.Lock()
	lp.inbox.inTraffic = true
	lp.inbox.Unlock()
	n, closeConn := c.sess.Input(in)
	lp.inbox.Lock()
	lp.inbox.inTraffic = false
	items := lp.inbox.items
	lp.inbox.items = lp.spare[:0]
	lp.inbox.Unlock()
	lp.apply(items)
	lp.scratch.Trim()
	return n, closeConn
}

// drain is the scheduled drain task: it applies what the inbox holds.
func (lp *fakeLoop) drain() {
	lp.inbox.Lock()
	items := lp.inbox.items
	lp.inbox.items = lp.spare[:0]
	lp.inbox.scheduled = false
	lp.inbox.Unlock()
	lp.apply(items)
}

// apply delivers posted results, then keeps the slice for reuse.
func (lp *fakeLoop) apply(items []loopDelivery) {
	for i := range items {
		d := &items[i]
		if d.c.sess.Deliver(d.r) {
			d.c.sess.FlushPushes()
		}
		lp.delivered = append(lp.delivered, d.c)
		*d = loopDelivery{}
	}
	lp.spare = items[:0]
}

var loopConnAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}

func (c *loopConn) Write(b []byte)              { c.out = append(c.out, b...) }
func (c *loopConn) Unsent() int                 { return 0 }
func (c *loopConn) Close()                      { c.closed = true }
func (c *loopConn) Wake()                       { c.woken = true }
func (c *loopConn) Yield() bool                 { return false }
func (c *loopConn) PauseRead() bool             { return false }
func (c *loopConn) ResumeRead()                 {}
func (c *loopConn) RemoteAddr() net.Addr        { return loopConnAddr }
func (c *loopConn) SetTimer(at timerwheel.Tick) {}
func (c *loopConn) Scratch() *Scratch           { return &c.lp.scratch }

// Post queues r in the owning loop's inbox, from any goroutine, and wakes
// the loop unless a drain is scheduled or the loop is in traffic (it
// applies the inbox on the way out).
func (c *loopConn) Post(r engine.Result) {
	lp := c.lp
	lp.inbox.Lock()
	lp.inbox.items = append(lp.inbox.items, loopDelivery{c: c, r: r})
	post := !lp.inbox.scheduled && !lp.inbox.inTraffic
	if post {
		lp.inbox.scheduled = true
	}
	lp.inbox.Unlock()
	if post {
		select {
		case lp.wake <- struct{}{}:
		default:
		}
	}
}

func (c *loopConn) HalfOpen() bool { return false }
