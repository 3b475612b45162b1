package fanout

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// subBufSize holds a few push lines; a reading subscriber gets one per
// read in the closed loop.
const subBufSize = 4 << 10

// subscriber is one reading connection. Its goroutine (read) owns buf and
// next; the publisher reads its replies channel.
type subscriber struct {
	id        int
	r         *run
	nc        *net.TCPConn
	rx        *rxConn
	buf       []byte
	next      int64       // sequence number of the push it must get next
	replies   chan string // lines that are not pushes: answers to listen/unlisten
	listening atomic.Bool // pushes are expected
	// unstamped counts the measured pushes that came without a kernel
	// receive timestamp and were recorded at their read time (see line).
	unstamped atomic.Int64
}

// read consumes the connection until it is closed, checking every push
// and recording its latencies in the round.
func (s *subscriber) read() {
	end := 0
	for {
		n, stamp, err := s.rx.read(s.buf[end:])
		now := time.Now().UnixNano()
		if err != nil {
			if !s.r.stopping.Load() {
				s.r.fail(s.errorf(nil, "%v", connErr(err)))
			}
			return
		}
		end += n
		start := 0
		for {
			i := bytes.IndexByte(s.buf[start:end], '\n')
			if i < 0 {
				break
			}
			if err := s.line(s.buf[start:start+i], stamp, now); err != nil {
				s.r.fail(err)
				return
			}
			start += i + 1
		}
		end = copy(s.buf, s.buf[start:end])
		if end == len(s.buf) {
			s.r.fail(s.errorf(s.buf[:80], "line longer than %d bytes", len(s.buf)))
			return
		}
	}
}

// line handles one line received at stamp (kernel) and read at now.
func (s *subscriber) line(line []byte, stamp, now int64) error {
	if !bytes.HasPrefix(line, []byte("sig ")) {
		select {
		case s.replies <- string(line):
			return nil
		default:
			return s.errorf(line, "a reply nobody asked for")
		}
	}
	if !s.listening.Load() {
		return s.errorf(line, "push after unlisten was answered")
	}
	seq, phase, sent, err := parsePush(line, s.r.cfg.Channel, s.r.cfg.Payload)
	if err != nil {
		return s.errorf(line, "%v", err)
	}
	// Loading the round's sequence number orders this goroutine after the
	// publisher's reading of the previous round (see round).
	cur := &s.r.cur
	if want := cur.seq.Load(); seq != s.next || seq != want {
		return s.errorf(line, "sequence %d, want %d (signal in flight: %d): a push was lost, repeated or reordered", seq, s.next, want)
	}
	if want := byte(cur.phase.Load()); phase != want {
		return s.errorf(line, "phase %q, want %q", phase, want)
	}
	if stamp == 0 {
		// Linux switches receive timestamps on for the whole system
		// lazily: the first socket to ask for them (or the first after
		// the last one that had them closed, as between two runs)
		// schedules the switch on a workqueue, and segments that arrive
		// before it runs carry none. On a loaded machine that is the
		// first pushes of a run, often past a short warm-up. Such a push
		// is recorded at its read time instead: taken after recvmsg
		// returned, it is never earlier than the receipt, so it can only
		// make the server look slower. Warm-up pushes are not measured;
		// the measured ones are counted (unstampedPushes), so a result
		// can say how many of its receipts are read times.
		stamp = now
		if phase != phaseWarmup {
			s.unstamped.Add(1)
		}
	}
	s.next++
	cur.stamp[s.id] = stamp - sent
	cur.read[s.id] = now - sent
	if cur.remaining.Add(-1) == 0 {
		cur.done <- struct{}{}
	}
	return nil
}

// unstampedPushes is how many measured pushes of the run came without a
// kernel receive timestamp, their receipt recorded at their read time.
// Call it once the phases are over.
func (r *run) unstampedPushes() int64 {
	var n int64
	for _, s := range r.subs {
		n += s.unstamped.Load()
	}
	return n
}

func (s *subscriber) errorf(line []byte, format string, args ...any) error {
	e := &Error{Target: s.r.cfg.Name, Who: fmt.Sprintf("subscriber %d", s.id), Err: fmt.Errorf(format, args...)}
	if line != nil {
		e.Line = string(line)
	}
	return e
}

// connErr names a connection the server closed plainly.
func connErr(err error) error {
	if errors.Is(err, io.EOF) {
		return errors.New("connection closed by the server")
	}
	return err
}

// Error is a failed fan-out run: who saw what.
type Error struct {
	Target string
	Who    string // "subscriber 17", "publisher", "slow subscriber"
	Line   string // offending line, if any
	Err    error
}

func (e *Error) Error() string {
	msg := "fanout: target " + e.Target + ": " + e.Who + ": "
	if e.Line != "" {
		msg += fmt.Sprintf("unexpected line %q: ", e.Line)
	}
	return msg + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }
