package netconn

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// conn is one accepted connection as a session.Transport. Every method
// but Post runs on the owner goroutine (owner.go).
type conn struct {
	// timer is the connection's node in its shard's wheel (timers.go). It
	// is the first field: a fired node converts back to its conn.
	timer  timerwheel.Node
	srv    *Server
	shard  *timerShard
	raw    net.Conn // as accepted: closing it unblocks every goroutine of the conn
	nc     net.Conn // raw, or the TLS connection over it
	remote net.Addr
	proto  session.Protocol

	// Owner-confined.
	sess       *session.Session
	sc         *session.Scratch // while the owner serves an event; pooled between events
	pend       []byte           // input read and not yet consumed by the session
	readPaused bool             // PauseRead: the owner does not read
	woken      bool             // Wake: call Input again with what is buffered
	readDone   bool             // reading ended (EOF or an error)
	closing    bool             // Close: the socket is being closed
	done       bool             // the socket is closed: the owner ends
	readSize   int              // the next Read's size (reader.go)
	// deadlinePast: a kick may have left the read deadline in the past.
	deadlinePast bool
	lingerMark   int64           // bytes sent when the linger was last checked
	lingerAt     timerwheel.Tick // when the linger is checked

	// signal wakes an owner that is not in Read for what the fields under
	// mu hold; one pending wake-up is as good as many.
	signal chan struct{}
	mu     sync.Mutex
	posted []engine.Result // for Session.Deliver, in order
	spare  []engine.Result // the other half of the posted double buffer
	events eventSet
	// reading: the owner is in Read (or about to be), so a wake-up is a
	// kick (reader.go); kicked: this Read was kicked already.
	reading, kicked bool
	// handshaking is true while the TLS handshake runs: the timer then
	// closes the socket instead of waking the owner (which is blocked in
	// the handshake).
	handshaking atomic.Bool
	// pushBytes is the size of the pushes posted and not yet delivered,
	// for Yield.
	pushBytes atomic.Int64
	// paused mirrors readPaused for other goroutines (a test, a
	// debugger): the owner alone writes it.
	paused atomic.Bool

	out output // writer.go
}

// eventSet is what other goroutines ask of the owner, besides deliveries.
type eventSet uint8

const (
	evTimer    eventSet = 1 << iota // the timer node fired
	evDrained                       // the output drained while reading was paused
	evSockDone                      // the socket is closed
	evAbort                         // close now (Shutdown's time ran out)
	evHangup                        // close once the queued output is sent (Server.Hangup)
)

// notify records events for the owner and wakes it; any goroutine.
func (c *conn) notify(ev eventSet) {
	c.mu.Lock()
	c.events |= ev
	kick := c.kickLocked()
	c.mu.Unlock()
	c.wake(kick)
}

// expired is called by the timer driver when c's node fired.
func (c *conn) expired() {
	if c.handshaking.Load() {
		// The handshake did not finish in time: closing the socket
		// fails it, and the owner cleans up.
		_ = c.raw.Close()
		return
	}
	c.notify(evTimer)
}

// abort closes the socket under every goroutine of the connection and
// has the owner end the session; any goroutine.
func (c *conn) abort() {
	_ = c.raw.Close()
	c.notify(evAbort)
}

// Write queues b for the writer (writer.go).
func (c *conn) Write(b []byte) { c.out.write(c, b) }

// Unsent is what the socket has not taken: queued, or in a Write call.
func (c *conn) Unsent() int { return int(c.out.unsent.Load()) }

// Close sends what is queued, then closes the socket; the owner then
// calls Session.Closed. A peer that takes nothing gets the linger
// (owner.go) before the close is forced.
func (c *conn) Close() {
	if c.closing {
		return
	}
	c.closing = true
	c.startLinger()
	c.out.closeAfterFlush(c)
}

func (c *conn) Wake() { c.woken = true }

// Yield: pushes posted for this session pile up while it serves input.
func (c *conn) Yield() bool { return c.pushBytes.Load() >= session.PushBudget }

// PauseRead stops reading: the owner reads nothing more until
// ResumeRead. The writer tells the owner when the output has drained, so
// that the session can resume at once.
func (c *conn) PauseRead() bool {
	c.readPaused = true
	c.paused.Store(true)
	c.out.setDrainNotice(c, true)
	return true
}

func (c *conn) ResumeRead() {
	c.readPaused = false
	c.paused.Store(false)
	c.out.setDrainNotice(c, false)
}

func (c *conn) RemoteAddr() net.Addr { return c.remote }

func (c *conn) SetTimer(at timerwheel.Tick) {
	if !c.closing {
		c.shard.arm(c, at)
	}
}

// Scratch lends the session pooled working memory for the event the owner
// is serving; the owner takes it back after the event (releaseScratch).
func (c *conn) Scratch() *session.Scratch {
	if c.sc == nil {
		c.sc = scratchPool.Get().(*session.Scratch)
		c.sc.Counters = c.shard.counters
	}
	return c.sc
}

var scratchPool = sync.Pool{New: func() any {
	return &session.Scratch{Out: make([]byte, 0, 4096)}
}}

// releaseScratch returns the scratch to the pool once nothing refers to
// it, trimmed of what a rare large use grew.
func (c *conn) releaseScratch() {
	if c.sc == nil {
		return
	}
	c.sc.Trim()
	c.sc.Counters = nil
	scratchPool.Put(c.sc)
	c.sc = nil
}

// Post queues a result for Session.Deliver; any goroutine, never blocks.
func (c *conn) Post(r engine.Result) {
	if r.Kind == engine.KindPush {
		c.pushBytes.Add(pushSize(&r))
	}
	c.mu.Lock()
	c.posted = append(c.posted, r)
	kick := c.kickLocked()
	c.mu.Unlock()
	c.wake(kick)
}

// pushSize is what a push counts towards Yield.
func pushSize(r *engine.Result) int64 { return int64(len(r.Push.A) + len(r.Push.B) + 16) }
