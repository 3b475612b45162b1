package netconn

import (
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
)

// closeLinger is how long a closing connection may go without the peer
// taking a byte of its last output before the socket is closed anyway:
// a client that stopped reading (the write timeout, a slow consumer) must
// not keep its session, and its holds, alive.
const closeLinger = time.Second

// keepPend bounds the input buffer an owner keeps once it is empty: the
// tail of a partial frame is rare, and an idle connection should hold
// nothing.
const keepPend = 4 << 10

// serve is the owner goroutine: the handshake, the session, then the
// cleanup.
func (c *conn) serve() {
	defer c.srv.wg.Done()
	defer c.srv.forget(c)
	if !c.handshake() {
		return
	}
	c.readSize = readMin
	// Half-open: the reader reports EOF through PeerClosed and closes
	// only if the session does not keep the connection for its owed
	// answers.
	c.sess = c.srv.hub.Open(c, c.proto, session.Peer{Addr: c.RemoteAddr(), HalfOpen: true})
	c.run()

	c.shard.stop(c)
	c.sess.Closed()
	c.releaseScratch()
	c.pend = nil
}

// handshake runs the TLS handshake, if the server has TLS, under the
// handshake deadline (the timer closes the socket when it passes). A
// client that fails it (plaintext, garbage, a CA it does not trust, too
// slow) is closed without a byte of the protocol.
func (c *conn) handshake() bool {
	cfg := c.srv.cfg
	if cfg.TLS == nil {
		return true
	}
	tc := tls.Server(c.raw, cfg.TLS)
	c.handshaking.Store(true)
	c.shard.reset(c, c.srv.clock.Now().After(cfg.HandshakeTimeout.Milliseconds()))
	err := tc.Handshake()
	c.handshaking.Store(false)
	c.shard.stop(c)
	if err != nil {
		// A peer that connects and closes without a byte (a TCP health
		// check, a port scan) is not worth an operator's attention.
		level := slog.LevelInfo
		if errors.Is(err, io.EOF) {
			level = slog.LevelDebug
		}
		cfg.Events.Log(level, "TLS handshake failed; closing", "remote", c.remote.String(), "error", err.Error())
		_ = c.raw.Close()
		return false
	}
	c.nc = tc
	return true
}

// run serves the session until its socket is closed: it reads (reader.go)
// or, while it must not, waits for what other goroutines ask, and serves
// that after every step.
func (c *conn) run() {
	for !c.done {
		switch {
		case c.woken:
			// Wake: serve what is buffered (after what service finds).
			c.woken = false
			c.consume(nil)
		case c.readPaused || c.closing || c.readDone:
			<-c.signal
		default:
			c.readOnce()
		}
		c.service()
		c.releaseScratch()
	}
}

// consume passes the buffered input, and b after it, to the session, and
// keeps what it did not consume. b is only read during the call.
func (c *conn) consume(b []byte) {
	if c.closing {
		return
	}
	buf := b
	if len(c.pend) > 0 {
		c.pend = append(c.pend, b...)
		buf = c.pend
	}
	n, closeConn := c.sess.Input(buf)
	rest := buf[n:]
	switch {
	case len(c.pend) > 0:
		c.pend = c.pend[:copy(c.pend, rest)]
	case len(rest) > 0:
		c.pend = append(c.pend[:0], rest...)
	}
	if len(c.pend) == 0 && cap(c.pend) > keepPend {
		c.pend = nil
	}
	if closeConn {
		c.Close()
	}
}

// service handles what other goroutines asked for: deliveries (then one
// FlushPushes for the pushes among them), the timer, the drain notice,
// the end of the socket.
func (c *conn) service() {
	c.mu.Lock()
	posted, ev := c.posted, c.events
	c.posted, c.spare = c.spare[:0], nil
	c.events = 0
	c.mu.Unlock()

	batched := false
	for i := range posted {
		r := &posted[i]
		if r.Kind == engine.KindPush {
			c.pushBytes.Add(-pushSize(r))
		}
		// A closing session still takes its deliveries (they only settle
		// its push accounting), as a gnet connection's does until its
		// close.
		if c.sess.Deliver(*r) {
			batched = true
		}
		*r = engine.Result{}
	}
	if batched && !c.closing {
		c.sess.FlushPushes()
	}
	if cap(posted) > keepPosted {
		posted = nil
	}
	c.mu.Lock()
	c.spare = posted[:0]
	c.mu.Unlock()

	switch {
	case ev&evSockDone != 0:
		c.done = true
		return
	case ev&evAbort != 0:
		// The socket is closed already; the writer finds it so and
		// reports the end.
		c.Close()
		return
	case ev&evHangup != 0 && !c.closing:
		// After the deliveries above: their replies go out first. The
		// close arms the linger, so a timer event now is not needed.
		c.Close()
	case ev&evTimer != 0 && c.closing:
		c.linger()
	case ev&evTimer != 0:
		c.sess.Timer()
	}
	if ev&evDrained != 0 && c.readPaused {
		c.woken = true // let the session resume (Session.Input checks the drain)
	}
}

// keepPosted bounds the delivery buffers a connection keeps between
// batches: a fan-out burst's are let go.
const keepPosted = 64

// startLinger arms the timer for a closing connection.
func (c *conn) startLinger() {
	c.lingerMark = c.out.sent.Load()
	c.lingerAt = c.srv.clock.Now().After(closeLinger.Milliseconds())
	c.shard.reset(c, c.lingerAt)
}

// linger runs when a closing connection's timer fires: if the peer took
// nothing of the last output for closeLinger, the socket is closed under
// the writer, which then ends.
func (c *conn) linger() {
	now := c.srv.clock.Now()
	if !now.Passed(c.lingerAt) {
		// A timer event of the session's, from before the close.
		c.shard.reset(c, c.lingerAt)
		return
	}
	if sent := c.out.sent.Load(); sent != c.lingerMark {
		c.lingerMark = sent
		c.lingerAt = now.After(closeLinger.Milliseconds())
		c.shard.reset(c, c.lingerAt)
		return
	}
	_ = c.raw.Close()
}
