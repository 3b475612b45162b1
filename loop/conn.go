package loop

import (
	"context"
	"net"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/bytebufferpool"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// conn is a gnet connection as a session.Transport. Every method but Post
// runs on the connection's event loop.
type conn struct {
	// timer is the session's one timer, in its loop's wheel (readtimer.go).
	// It is the first field: a fired node converts back to its conn.
	timer  timerwheel.Node
	c      gnet.Conn
	lp     *loopState
	sess   *session.Session
	closed bool
	watch  uint32 // the peer watch's number for it while paused, or 0
	// raw is the connection as the listener returned it (closed since:
	// gnet serves a duplicate), which Hangup's callers know it by.
	raw     net.Conn
	wrapped bool // raw wraps the socket: OnClose closes it
	// held is output written while its loop applies deliveries, sent
	// when they are applied (held.go); nil when none.
	held *bytebufferpool.ByteBuffer
	// halfOpen: the session may be owed answers when its peer's input
	// ends (a cluster member's), and is kept to write them (afterlife.go).
	halfOpen bool
	// after is set once gnet has closed the connection on its peer's EOF
	// while answers were owed: c is gone, and they go to after.
	after  *afterlife
	ending bool // the afterlife is closing
}

func (cs *conn) Write(b []byte) {
	if cs.lp.batching {
		cs.lp.hold(cs, b)
		return
	}
	cs.send(b)
}

func (cs *conn) Unsent() int {
	if cs.after != nil {
		return cs.after.unsent()
	}
	return cs.c.OutboundBuffered()
}

// Close closes the connection after what it has written, held output
// included.
func (cs *conn) Close() {
	cs.writeHeld()
	if cs.after != nil {
		if !cs.ending {
			// The cleanup runs as a task of its own, as gnet's OnClose
			// would, not inside the session call that closes.
			cs.ending = true
			cs.after.close()
			_ = cs.lp.el.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				cs.lp.srv.closed(cs)
				return nil
			}))
		}
		return
	}
	_ = cs.c.Close()
}

// Wake: a connection in its afterlife has nothing more to read.
func (cs *conn) Wake() {
	if cs.after == nil {
		_ = cs.c.Wake(nil)
	}
}

// Yield: pushes for this loop's connections are piling up in its inbox.
func (cs *conn) Yield() bool { return cs.lp.pushBytes.Load() >= session.PushBudget }

// PauseRead stops reading the socket, and watches it for the peer's going
// meanwhile (peerwatch_linux.go).
func (cs *conn) PauseRead() bool {
	if cs.after != nil {
		return true // nothing is read any more
	}
	if !cs.lp.pauser.pause(cs.c.Fd(), cs.c.OutboundBuffered() > 0) {
		return false
	}
	cs.lp.srv.watch.add(cs)
	return true
}

func (cs *conn) ResumeRead() {
	if cs.after != nil {
		return
	}
	cs.lp.srv.watch.remove(cs)
	cs.lp.pauser.resume(cs.c.Fd(), cs.c.OutboundBuffered() > 0)
}

func (cs *conn) RemoteAddr() net.Addr {
	if cs.after != nil {
		return cs.after.remote
	}
	return cs.c.RemoteAddr()
}

func (cs *conn) SetTimer(at timerwheel.Tick) { cs.lp.rt.arm(cs, at) }

func (cs *conn) Scratch() *session.Scratch { return &cs.lp.scratch }

// Post queues a result for the session in its loop's inbox; any goroutine.
func (cs *conn) Post(r engine.Result) { cs.lp.push(delivery{cs: cs, result: r}) }

// traffic is OnTraffic for this connection: the session consumes complete
// requests straight out of gnet's inbound buffer.
func (cs *conn) traffic() gnet.Action {
	buf, _ := cs.c.Peek(-1)
	n, closeConn := cs.sess.Input(buf)
	if n > 0 {
		// gnet's Discard treats n <= 0 as "everything".
		_, _ = cs.c.Discard(n)
	}
	if closeConn {
		return gnet.Close
	}
	if cs.halfOpen && cs.c.OutboundBuffered() > 0 {
		// gnet drops the output it holds when it closes: an EOF read now
		// would lose it, and the answers behind it (afterlife.go).
		cs.sess.HoldInput()
	}
	return gnet.None
}
