package main

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// traffic is the state the workers of a run share: the counters and the
// -frames budget.
type traffic struct {
	frames, replies, pushes, dials atomic.Int64
	closes                         atomic.Int64 // connections the server ended
	stuck                          atomic.Int64 // connections dropped after -blockwait without a reply

	maxFrames int64         // 0 = no budget
	spent     chan struct{} // closed once maxFrames frames have been sent
	spendOnce sync.Once
}

func newTraffic(maxFrames int64) *traffic {
	return &traffic{maxFrames: maxFrames, spent: make(chan struct{})}
}

// reserve counts one frame about to be sent; false when the budget is spent.
func (t *traffic) reserve() bool {
	n := t.frames.Add(1)
	if t.maxFrames == 0 || n < t.maxFrames {
		return true
	}
	t.spendOnce.Do(func() { close(t.spent) })
	if n > t.maxFrames {
		t.frames.Add(-1)
		return false
	}
	return true
}

func (t *traffic) isSpent() bool {
	select {
	case <-t.spent:
		return true
	default:
		return false
	}
}

// worker is one client connection: it writes -pipeline frames, waits for
// their replies, and so on; whenever the connection ends (closed by the
// server, no reply within -blockwait, -churn) it dials again.
type worker struct {
	cfg      *config
	addr     string
	tr       *traffic
	gen      *generator
	interval time.Duration // between writes under -rate; 0 = unpaced
	next     time.Time     // when the next write is due under -rate
}

func (w *worker) run(ctx context.Context) {
	d := net.Dialer{Timeout: 5 * time.Second}
	for ctx.Err() == nil && !w.tr.isSpent() {
		c, err := d.DialContext(ctx, "tcp", w.addr)
		if err != nil {
			pause(ctx, 50*time.Millisecond) // refused (full, or gone: the sampler tells)
			continue
		}
		w.tr.dials.Add(1)
		w.session(ctx, c)
	}
}

// session sends frames on c until it ends, or ctx is done, or the frame
// budget is spent.
func (w *worker) session(ctx context.Context, c net.Conn) {
	replies := make(chan string, 64)
	dead, quit := make(chan struct{}), make(chan struct{})
	go w.read(c, replies, dead, quit)
	unhook := context.AfterFunc(ctx, func() { _ = c.Close() }) // also unblocks a write
	defer func() {
		unhook()
		close(quit)
		_ = c.Close()
		<-dead
	}()

	bw := bufio.NewWriterSize(c, 4096)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var lines []string
	var sent, got int64 // lines sent, replies received
	for {
		if w.interval > 0 {
			w.next = w.next.Add(w.interval)
			pause(ctx, time.Until(w.next))
		}
		if ctx.Err() != nil || w.cfg.churn > 0 && w.gen.r.Float64() < w.cfg.churn {
			return
		}
		for range w.cfg.pipeline {
			if !w.tr.reserve() {
				return
			}
			lines, _ = w.gen.frame(lines[:0])
			for _, l := range lines {
				_, _ = bw.WriteString(l)
				_ = bw.WriteByte('\n')
			}
			sent += int64(len(lines))
		}
		_ = c.SetWriteDeadline(time.Now().Add(w.cfg.blockWait))
		if err := bw.Flush(); err != nil {
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, os.ErrDeadlineExceeded):
				w.tr.stuck.Add(1)
			default:
				w.tr.closes.Add(1)
			}
			return
		}
		// The server frames every three lines, whatever they hold: one
		// reply per three lines sent, misaligned ones included.
		timer.Reset(w.cfg.blockWait)
		for got < sent/3 {
			select {
			case l := <-replies:
				got++
				w.tr.replies.Add(1)
				w.gen.noteToken(l)
			case <-dead:
				if ctx.Err() == nil {
					w.tr.closes.Add(1)
				}
				return
			case <-timer.C:
				w.tr.stuck.Add(1)
				return
			}
		}
	}
}

// read passes the replies on c to replies and counts the pushes, which
// arrive whenever the server sends them, until c fails or quit is closed.
func (w *worker) read(c net.Conn, replies chan<- string, dead chan<- struct{}, quit <-chan struct{}) {
	defer close(dead)
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // stats and lrange replies can be long
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "sig ") || strings.HasPrefix(l, "watch ") || strings.HasPrefix(l, "leader ") {
			w.tr.pushes.Add(1)
			continue
		}
		select {
		case replies <- l:
		case <-quit:
			return
		}
	}
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
