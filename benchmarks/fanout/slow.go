package fanout

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// Filling the slow subscriber.
const (
	// fillBatch signals are pipelined per write while filling: the fill
	// channel has one receiver, so each costs the server little. The
	// server's end is checked after every batch, so calibration is exact to
	// a batch (~3.5 KiB).
	fillBatch = 16
	// fillMargin is how far below the calibrated capacity the slow
	// subscriber is filled, so that the slow phase's own signals (not the
	// fill) push it over the server's bound. Calibrations agree within
	// ~1 % (~30 KiB of Linux's default loopback buffering) on one machine.
	fillMargin = 64 << 10
	// fillAttempts: an overshoot (dropped while filling) retries with a
	// doubled margin.
	fillAttempts = 3
)

// calibrate measures what a never-reading subscriber absorbs before the
// server disconnects it: kernel socket buffers plus what the server holds
// until its backlog bound or its write timeout cuts the connection.
func (r *run) calibrate() (int64, error) {
	c, w, err := r.joinSlow(false)
	if err != nil {
		return 0, err
	}
	defer w.close()
	defer c.Close()
	sent, closed, err := r.flood(w, r.cfg.MaxSlowBytes)
	if err != nil {
		return 0, err
	}
	if !closed {
		return 0, r.errorf("slow subscriber", "was sent %d MiB without being disconnected: the server does not bound a slow consumer's backlog", sent>>20)
	}
	return sent, nil
}

// slowSubscriber joins a never-reading subscriber to the main and the
// fill channel and fills it to just under capacity. It returns the
// connection, a watch on the server's end of it, and the bytes pushed.
func (r *run) slowSubscriber(capacity int64) (net.Conn, *sockWatch, int64, error) {
	margin := int64(fillMargin)
	for attempt := 1; ; attempt++ {
		c, w, err := r.joinSlow(true)
		if err != nil {
			return nil, nil, 0, err
		}
		sent, closed, err := r.flood(w, capacity-margin)
		if err != nil {
			w.close()
			return nil, nil, 0, err
		}
		if !closed {
			return c, w, sent, nil
		}
		w.close()
		_ = c.Close()
		if attempt == fillAttempts {
			return nil, nil, 0, r.errorf("slow subscriber", "disconnected while filling to %d of the %d bytes calibrated, %d times", capacity-margin, capacity, attempt)
		}
		margin *= 2
	}
}

// joinSlow connects a subscriber with a small receive buffer, has it
// listen on the fill channel (and on the main one if main), reads the
// answers and never reads again.
func (r *run) joinSlow(main bool) (net.Conn, *sockWatch, error) {
	c, err := dialSlow(r.cfg.Addr, r.cfg.SlowRcvBuf)
	if err != nil {
		return nil, nil, r.errorf("slow subscriber", "dial: %v", err)
	}
	if !r.track(c) {
		return nil, nil, r.err
	}
	req, want := "listen\n"+r.cfg.fillChannel()+"\n\n", "ok\n"
	if main {
		req, want = "listen\n"+r.cfg.Channel+"\n\n"+req, want+want
	}
	_ = c.SetDeadline(time.Now().Add(r.cfg.Timeout))
	if _, err := c.Write([]byte(req)); err != nil {
		return nil, nil, r.errorf("slow subscriber", "%v", connErr(err))
	}
	// Exactly the answers: a buffered reader could swallow pushes.
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		return nil, nil, r.errorf("slow subscriber", "reading the answers to listen: %v", connErr(err))
	}
	if string(got) != want {
		e := r.errorf("slow subscriber", "want %q to listen", want).(*Error)
		e.Line = string(got)
		return nil, nil, e
	}
	_ = c.SetDeadline(time.Time{})
	w, err := newSockWatch(c)
	if err != nil {
		return nil, nil, r.errorf("slow subscriber", "%v", err)
	}
	if open, err := w.open(); err != nil || !open {
		w.close()
		return nil, nil, r.errorf("slow subscriber", "cannot see the server's end of its connection (open %v, %v)", open, err)
	}
	return c, w, nil
}

// flood signals the fill channel, whose only receiver is the never-reading
// subscriber watched by w, until budget push bytes were sent or the server
// has disconnected it. sent counts the batches sent while it was open.
func (r *run) flood(w *sockWatch, budget int64) (sent int64, closed bool, err error) {
	line := int64(pushLen(r.cfg.fillChannel(), r.cfg.Payload))
	var req []byte
	for i := 0; i < fillBatch; i++ {
		req = append(req, "signal\n"...)
		req = append(req, r.cfg.fillChannel()...)
		req = append(req, '\n')
		for j := 0; j < r.cfg.Payload; j++ {
			req = append(req, padByte)
		}
		req = append(req, '\n')
	}
	one := len(req) / fillBatch
	for sent+line <= budget {
		k := min(int64(fillBatch), (budget-sent)/line)
		_ = r.pub.SetDeadline(time.Now().Add(r.cfg.Timeout))
		if _, err := r.pub.Write(req[:int(k)*one]); err != nil {
			return 0, false, r.errorf("publisher", "filling: %v", connErr(err))
		}
		for i := k; i > 0; i-- {
			b, err := r.pubR.ReadSlice('\n')
			if err != nil {
				return 0, false, r.errorf("publisher", "filling: %v", connErr(err))
			}
			// 0: the server stopped counting it (behind, or gone).
			if v, ok := parseReceivers(b[:len(b)-1]); !ok || v > 1 {
				e := r.errorf("publisher", "want \"ok 1\" or \"ok 0\" to a signal on a channel with one subscriber").(*Error)
				e.Line = string(b[:len(b)-1])
				return 0, false, e
			}
		}
		open, err := w.open()
		if err != nil {
			return 0, false, r.errorf("slow subscriber", "%v", err)
		}
		if !open {
			return sent, true, nil
		}
		sent += k * line
	}
	return sent, false, nil
}

// drainClosed reads what is left on the slow subscriber's socket and
// wants the server to have closed it. It returns the bytes read.
//
// The server's closed socket is an orphan holding the backlog the
// subscriber never read; the kernel may discard such an orphan (too many
// orphans, memory pressure, its zero-window probes run out) without a
// reset, so that the rest never comes. A socket the kernel no longer has
// at all (w.exists) while nothing more arrives is closed too.
func (r *run) drainClosed(c net.Conn, w *sockWatch) (int64, error) {
	const slice = 250 * time.Millisecond
	end := time.Now().Add(r.cfg.Timeout)
	var n int64
	for {
		next := time.Now().Add(slice)
		if next.After(end) {
			next = end
		}
		_ = c.SetReadDeadline(next)
		k, err := io.Copy(io.Discard, c)
		n += k
		switch {
		case err == nil: // EOF: closed after the backlog
			return n, nil
		case isReset(err): // closed with its backlog unsent
			return n, nil
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return n, r.errorf("slow subscriber", "draining: %v", err)
		}
		if k == 0 {
			exists, err := w.exists()
			if err != nil {
				return n, r.errorf("slow subscriber", "%v", err)
			}
			if !exists { // discarded by the kernel, backlog and all
				return n, nil
			}
		}
		if !time.Now().Before(end) {
			return n, r.errorf("slow subscriber", "no longer counted, but still open %v later (%d bytes read)", r.cfg.Timeout, n)
		}
	}
}
