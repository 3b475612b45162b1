package netconn

import (
	"errors"
	"net"
	"os"
	"time"
)

// Reading. The owner reads the socket itself: an idle connection is one
// goroutine parked in Read, not a reader and an owner. What other
// goroutines have for it (a delivery, the timer, the drain notice) must
// then get it out of a Read that may never return by itself: they kick
// it, setting the read deadline in the past, which makes the Read return
// at once with a timeout, as net/http's server interrupts its background
// read. A timeout leaves a TLS connection usable (crypto/tls keeps the
// partial record and does not make a temporary error sticky), and a
// deadline in the past arms no runtime timer.
//
// While the owner does not read (PauseRead, a close under way), nothing
// reads: TCP flow control holds the client back.

// Read sizes. An idle connection waits in a readMin buffer; a read that
// fills its buffer means more is coming, so the next one is twice as big,
// up to readMax; the first read that does not fill one ends the burst and
// the size starts small again. (Over TLS a Read returns at most one
// record, 16 KiB, and small reads cost copies, not system calls: the
// record stays in the TLS connection's own buffer.)
const (
	readMin = 1 << minClass
	readMax = 1 << maxClass
)

// longAgo is the deadline of a kick: any time in the past.
var longAgo = time.Unix(1, 0)

// readOnce reads the socket once and serves what it read, unless other
// goroutines have something for the owner already. A kick ends the Read
// early. The socket's end (EOF, a reset, closed under the owner) closes
// the connection, once what came before it is answered.
func (c *conn) readOnce() {
	if c.deadlinePast {
		// The last Read was kicked (or a kick came late): the deadline
		// must not end the next one.
		_ = c.nc.SetReadDeadline(time.Time{})
		c.deadlinePast = false
	}
	c.mu.Lock()
	if len(c.posted) > 0 || c.events != 0 {
		c.mu.Unlock()
		return
	}
	c.reading, c.kicked = true, false
	c.mu.Unlock()

	buf := getBuf(c.readSize)
	n, err := c.nc.Read((*buf)[:c.readSize])

	c.mu.Lock()
	c.reading = false
	c.deadlinePast = c.kicked
	c.mu.Unlock()
	if n > 0 {
		c.shard.reads.Add(1)
		if n == c.readSize {
			c.readSize = min(2*c.readSize, readMax)
		} else {
			c.readSize = readMin
		}
		c.consume((*buf)[:n])
	}
	putBuf(buf)
	switch {
	case err == nil:
	case isTimeout(err):
		// A kick, maybe a late one from an earlier Read: the only
		// deadline the owner ever sets is in the past.
		c.deadlinePast = true
	default:
		c.readDone = true
		if !c.closing && c.sess.PeerClosed() {
			return // the session closes once its replies are written
		}
		// The session's disconnect cleanup first, then the socket's
		// close, as the gnet loops order them: a client that saw the
		// close finds what it held released (on a cluster member, the
		// close is in the log before any request sent after it).
		c.sess.Closed()
		c.Close()
	}
}

// isTimeout reports a Read ended by its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// wake tells the owner that something is queued for it (under c.mu, by
// the caller): a kick if it is in Read, else a token on its signal
// channel. Any goroutine; the caller has unlocked c.mu.
func (c *conn) wake(kick bool) {
	if kick {
		_ = c.nc.SetReadDeadline(longAgo)
		return
	}
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// kickLocked reports whether the owner must be kicked out of its Read,
// and notes that it was; c.mu is held.
func (c *conn) kickLocked() bool {
	if !c.reading || c.kicked {
		return false
	}
	c.kicked = true
	return true
}
