package netconn

import (
	"sync"
	"sync/atomic"
)

// maxWrite bounds one Write call: the socket's progress becomes visible
// (Unsent goes down) at least every maxWrite bytes, which the session's
// write timeout and push backlog read, and it is one full TLS record.
const maxWrite = 16 << 10

// output is a connection's queued output and its writer goroutine, which
// runs only while there is something to send.
type output struct {
	mu      sync.Mutex
	pending *[]byte // queued, not yet taken by the writer; nil when empty
	writing bool    // a writer goroutine runs
	// closeAfter: close the socket once pending is sent; closed: it is.
	closeAfter bool
	closed     bool
	// drainNotice: tell the owner when the output drains (reading is
	// paused until it does).
	drainNotice bool

	// unsent is pending plus what a Write call holds; sent counts every
	// byte the socket took (a closing connection's progress).
	unsent atomic.Int64
	sent   atomic.Int64
}

// write queues b and starts the writer if it is not running. Bytes
// written after the close began are dropped.
func (o *output) write(c *conn, b []byte) {
	o.mu.Lock()
	if o.closed || o.closeAfter {
		o.mu.Unlock()
		return
	}
	if o.pending == nil {
		o.pending = getBuf(len(b))
		*o.pending = (*o.pending)[:0]
	}
	*o.pending = append(*o.pending, b...)
	o.unsent.Add(int64(len(b)))
	start := !o.writing
	o.writing = true
	o.mu.Unlock()
	if start {
		c.srv.wg.Add(1)
		go o.run(c)
	}
}

// closeAfterFlush asks the writer to close the socket once the queue is
// sent, starting it if it is not running.
func (o *output) closeAfterFlush(c *conn) {
	o.mu.Lock()
	if o.closed || o.closeAfter {
		o.mu.Unlock()
		return
	}
	o.closeAfter = true
	start := !o.writing
	o.writing = true
	o.mu.Unlock()
	if start {
		c.srv.wg.Add(1)
		go o.run(c)
	}
}

// setDrainNotice turns the drain notice on or off. Turned on with nothing
// queued and no writer running, there is no drain to wait for: the owner
// is told at once.
func (o *output) setDrainNotice(c *conn, on bool) {
	o.mu.Lock()
	o.drainNotice = on
	idle := on && !o.writing && o.pending == nil
	o.mu.Unlock()
	if idle {
		c.notify(evDrained)
	}
}

// run is the writer goroutine: it sends the queue, batch by batch, until
// nothing is left, then ends (or closes the socket, if asked).
func (o *output) run(c *conn) {
	defer c.srv.wg.Done()
	for {
		o.mu.Lock()
		batch := o.pending
		o.pending = nil
		if batch == nil {
			closeNow := o.closeAfter
			notice := o.drainNotice && !closeNow
			if !closeNow {
				o.writing = false
			}
			o.mu.Unlock()
			if closeNow {
				c.closeSocket(true)
			} else if notice {
				c.notify(evDrained)
			}
			return
		}
		o.mu.Unlock()
		err := o.send(c, *batch)
		putBuf(batch)
		if err != nil {
			// The peer is gone or the socket was closed under us: what is
			// queued can never go. The owner learns it from the close.
			o.mu.Lock()
			if o.pending != nil {
				o.unsent.Add(-int64(len(*o.pending)))
				putBuf(o.pending)
				o.pending = nil
			}
			o.closed = true // no more writes queue
			o.mu.Unlock()
			c.closeSocket(false)
			return
		}
	}
}

// send writes b in Write calls of at most maxWrite bytes.
func (o *output) send(c *conn, b []byte) error {
	for len(b) > 0 {
		n, err := c.nc.Write(b[:min(len(b), maxWrite)])
		o.unsent.Add(-int64(n))
		o.sent.Add(int64(n))
		b = b[n:]
		if err != nil {
			o.unsent.Add(-int64(len(b)))
			return err
		}
	}
	return nil
}

// closeSocket closes the connection, once: gracefully (a TLS close_notify
// first) after the output was sent, or at once. Then the owner is told.
func (c *conn) closeSocket(graceful bool) {
	o := &c.out
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	if graceful {
		// tls.Conn.Close sends close_notify, bounded by its own write
		// deadline; the linger (owner.go) closes raw sooner if the peer
		// takes nothing.
		_ = c.nc.Close()
	}
	_ = c.raw.Close()
	c.notify(evSockDone)
}
