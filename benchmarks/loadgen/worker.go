package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// Buffer sizes of one connection.
const (
	readBufSize = 64 << 10 // many pipelined replies per read(2); a reply is far smaller
	maxRequest  = 512      // longest request any script appends (EVAL with the script)
)

// worker drives one connection. All its fields are owned by the goroutine
// running run, except nc, which the run's supervisor may poke with
// SetDeadline to stop it.
type worker struct {
	id     int
	target string
	nc     net.Conn
	sc     script
	parse  func([]byte) (Reply, int, error)
	base   time.Time // run clock zero (monotonic)
	start  int64     // measured window on the run clock: [start, end)
	end    int64
	abort  *atomic.Bool

	slots   []slot
	fifo    ring    // slots whose request was written, in write order
	pending []int32 // slots whose request sits in wbuf, not yet written
	rbuf    []byte
	rpos    int // parsed up to here
	rend    int // read up to here
	wbuf    []byte

	reqs, pairs, misses uint64
	reqHist, pairHist   *Histogram
}

func (w *worker) now() int64 { return int64(time.Since(w.base)) }

// run drives the connection until the end of the window, an abort or an
// error. A nil return means the window ended (or the run was aborted by
// another connection's error).
// The caller has set the connection's deadline (see Run).
func (w *worker) run() error {
	for i := range w.slots {
		w.wbuf = w.sc.begin(&w.slots[i], w.wbuf)
		w.queue(i)
	}
	for {
		if err := w.flush(); err != nil {
			return w.ioEnd(err)
		}
		if w.rend == len(w.rbuf) {
			// Only possible with a reply longer than the buffer; the parser
			// rejects those before, but never spin.
			return w.protoError(ErrLineTooLong)
		}
		n, err := w.nc.Read(w.rbuf[w.rend:])
		now := w.now()
		w.rend += n
		if err != nil {
			if n > 0 {
				// Judge the replies that arrived with the error first: a
				// malformed reply explains a close better than "EOF" does.
				if perr := w.process(now); perr != nil {
					return perr
				}
			}
			return w.ioEnd(err)
		}
		if err := w.process(now); err != nil {
			return err
		}
		if now >= w.end {
			return nil
		}
	}
}

// queue records that slot i's request was just appended to wbuf.
func (w *worker) queue(i int) {
	w.pending = append(w.pending, int32(i))
}

// flush writes wbuf, stamps the requests it carried and only then puts them
// in the FIFO: a reply can only answer a request that was written, so an
// extra reply in the same read as a grant is caught, not taken for the
// answer to the release appended a moment ago.
func (w *worker) flush() error {
	if len(w.wbuf) == 0 {
		return nil
	}
	t := w.now()
	for _, i := range w.pending {
		s := &w.slots[i]
		s.sentAt = t
		if s.fresh {
			s.opStart, s.fresh = t, false
		}
		w.fifo.push(i)
	}
	w.pending = w.pending[:0]
	_, err := w.nc.Write(w.wbuf)
	w.wbuf = w.wbuf[:0]
	return err
}

// process handles every complete reply in rbuf, all received at now, and
// appends the requests that follow them to wbuf.
func (w *worker) process(now int64) error {
	inWindow := now >= w.start && now < w.end
	for w.rpos < w.rend {
		r, n, err := w.parse(w.rbuf[w.rpos:w.rend])
		if err != nil {
			return w.protoError(err)
		}
		if n == 0 {
			break
		}
		i, ok := w.fifo.pop()
		if !ok {
			return w.replyError(nil, w.rbuf[w.rpos:w.rpos+n], errors.New("reply with no request in flight"))
		}
		s := &w.slots[i]
		var out outcome
		w.wbuf, out, err = w.sc.handle(s, r, w.wbuf)
		if err != nil {
			return w.replyError(s, w.rbuf[w.rpos:w.rpos+n], err)
		}
		w.rpos += n
		if inWindow {
			w.reqs++
			w.reqHist.Record(now - s.sentAt)
			switch out {
			case cyclePair:
				w.pairs++
				w.pairHist.Record(now - s.opStart)
			case cycleMiss:
				w.misses++
			}
		}
		if out != cycleContinues {
			w.wbuf = w.sc.begin(s, w.wbuf)
		}
		w.queue(int(i))
	}
	// Keep the unparsed tail at the front so the next read has room.
	if w.rpos == w.rend {
		w.rpos, w.rend = 0, 0
	} else if w.rpos > len(w.rbuf)/2 {
		w.rend = copy(w.rbuf, w.rbuf[w.rpos:w.rend])
		w.rpos = 0
	}
	return nil
}

// ioEnd classifies a read or write error: the deadline at the end of the
// window or an abort is the normal way out; anything else (EOF, reset) is
// the target failing the run.
func (w *worker) ioEnd(err error) error {
	if w.abort.Load() {
		return nil
	}
	// The only deadline ever set is the end of the window (an abort sets
	// its flag before moving the deadline), so a timeout is the normal end.
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("connection closed by the target")
	}
	return w.connError(err)
}

// RunError is a failed run: the first error seen, and how many connections
// failed in total.
type RunError struct {
	Target string
	Conn   int    // connection index
	Req    string // pending request, in words; empty if none
	Reply  string // offending reply bytes (quoted when printed); empty if none
	Err    error  // what was wrong
	Errors int    // connections that failed
}

func (e *RunError) Error() string {
	msg := "loadgen: target " + e.Target + ": "
	if e.Conn >= 0 {
		msg += "conn " + strconv.Itoa(e.Conn) + ": "
	}
	if e.Reply != "" || e.Req != "" {
		msg += fmt.Sprintf("unexpected reply %q", e.Reply)
		if e.Req != "" {
			msg += " to " + strconv.Quote(e.Req)
		}
		msg += ": "
	}
	msg += e.Err.Error()
	if e.Errors > 1 {
		msg += fmt.Sprintf(" (and %d more failed connections)", e.Errors-1)
	}
	return msg
}

func (e *RunError) Unwrap() error { return e.Err }

func (w *worker) connError(err error) *RunError {
	e := &RunError{Target: w.target, Conn: w.id, Err: err}
	if i, ok := w.fifo.peek(); ok {
		e.Req = w.sc.describe(&w.slots[i])
		e.Err = fmt.Errorf("%w (%d requests in flight)", err, w.fifo.len())
	}
	return e
}

func (w *worker) replyError(s *slot, reply []byte, err error) *RunError {
	e := &RunError{Target: w.target, Conn: w.id, Reply: string(reply), Err: err}
	if s != nil {
		e.Req = w.sc.describe(s)
	}
	return e
}

func (w *worker) protoError(err error) *RunError {
	tail := w.rbuf[w.rpos:w.rend]
	if len(tail) > 80 {
		tail = tail[:80]
	}
	var s *slot
	if i, ok := w.fifo.peek(); ok {
		s = &w.slots[i]
	}
	return w.replyError(s, tail, err)
}

// ring is a FIFO of slot indexes with room for every slot of a connection.
type ring struct {
	buf        []int32
	head, size int
}

func newRing(n int) ring { return ring{buf: make([]int32, n)} }

func (r *ring) len() int { return r.size }

func (r *ring) push(v int32) {
	if r.size == len(r.buf) {
		// Each slot has at most one request in flight; more means a script bug.
		panic("loadgen: more requests in flight than slots")
	}
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring) pop() (int32, bool) {
	if r.size == 0 {
		return 0, false
	}
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v, true
}

func (r *ring) peek() (int32, bool) {
	if r.size == 0 {
		return 0, false
	}
	return r.buf[r.head], true
}
