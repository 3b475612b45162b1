package fanout

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// round is the signal in flight. The publisher stores seq and remaining
// before writing a signal and reads stamp and read after done; a
// subscriber loads seq before writing its own entries and decrements
// remaining after, so the atomics and done order every access.
type round struct {
	seq       atomic.Int64
	phase     atomic.Uint32 // set before seq
	remaining atomic.Int64
	stamp     []int64 // per subscriber: write → kernel receive timestamp, ns
	read      []int64 // per subscriber: write → read by its goroutine, ns
	done      chan struct{}
}

// run is one repetition's connections and state.
type run struct {
	cfg  Config
	subs []*subscriber
	pub  net.Conn
	pubR *bufio.Reader
	wbuf []byte
	cur  round
	next int64 // sequence number of the next signal

	stopping atomic.Bool
	failOnce sync.Once
	failed   chan struct{}
	err      error // set once, before failed is closed

	mu    sync.Mutex // guards conns: fail closes them from any goroutine
	conns []net.Conn
	wg    sync.WaitGroup // subscriber goroutines
}

// Run runs one repetition against cfg.Addr and returns what it measured,
// or an *Error naming what went wrong. Cancelling ctx aborts it.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Go raises the soft limit to the hard one at startup; if that is
	// still too low, say so rather than fail on the 1,000th dial.
	if lim, err := fileLimit(); err == nil && lim < uint64(cfg.Subscribers)+64 {
		return nil, fmt.Errorf("%w: %s: %d subscribers need more than RLIMIT_NOFILE %d (raise ulimit -n)", ErrConfig, cfg.Name, cfg.Subscribers, lim)
	}
	r := &run{cfg: cfg, failed: make(chan struct{})}
	r.cur.stamp = make([]int64, cfg.Subscribers)
	r.cur.read = make([]int64, cfg.Subscribers)
	r.cur.done = make(chan struct{}, 1)
	defer r.close()
	stop := context.AfterFunc(ctx, func() { r.fail(ctx.Err()) })
	defer stop()

	res, err := r.phases()
	if err != nil {
		select {
		case <-r.failed:
			// The first failure explains the later ones (closed conns).
			return nil, r.err
		default:
			return nil, err
		}
	}
	return res, nil
}

func (r *run) phases() (*Result, error) {
	cfg := r.cfg
	n := cfg.Subscribers
	res := &Result{Target: cfg.Name, Subscribers: n, PushBytes: pushLen(cfg.Channel, cfg.Payload)}
	pub, err := r.dial()
	if err != nil {
		return nil, err
	}
	r.pub, r.pubR = pub, bufio.NewReader(pub)

	if res.SlowCapacity, err = r.calibrate(); err != nil {
		return nil, err
	}
	if err := r.subscribe(); err != nil {
		return nil, err
	}
	// The warm-up also proves every subscription is in place.
	warm := newPhaseAcc(0)
	for i := 0; i < cfg.Warmup; i++ {
		if err := r.signalWant(phaseWarmup, n, n, warm); err != nil {
			return nil, err
		}
	}
	clean := newPhaseAcc(cfg.PID)
	clean.begin()
	for i := 0; i < cfg.Signals; i++ {
		if err := r.signalWant(phaseClean, n, n, clean); err != nil {
			return nil, err
		}
	}
	if err := clean.end(); err != nil {
		return nil, err
	}
	res.Clean = clean.phase()

	// The last subscriber leaves and a never-reading one takes its place,
	// so every phase has n subscribers while the slow one is counted.
	extra := r.subs[n-1]
	extra.listening.Store(false)
	if err := r.request(extra, "unlisten\n"+cfg.Channel+"\n\n"); err != nil {
		return nil, err
	}
	slowConn, watch, filled, err := r.slowSubscriber(res.SlowCapacity)
	if err != nil {
		return nil, err
	}
	defer watch.close()
	res.SlowFilled = filled
	slow := newPhaseAcc(cfg.PID)
	slow.begin()
	for open := true; open; {
		if slow.signals == cfg.MaxSlowSignals {
			return nil, r.errorf("slow subscriber", "still connected after %d signals (%d push bytes on top of %d): the server does not bound its backlog",
				slow.signals, int64(slow.signals)*int64(res.PushBytes), filled)
		}
		got, err := r.signal(phaseSlow, n-1, slow)
		if err != nil {
			return nil, err
		}
		switch got {
		case int64(n):
			res.SlowCounted++
		case int64(n - 1): // behind: a server may stop counting it before it disconnects it
		default:
			return nil, r.errorf("publisher", "signal %d answered %d receivers, want %d (slow subscriber counted) or %d", r.next-1, got, n, n-1)
		}
		if open, err = watch.open(); err != nil {
			return nil, r.errorf("slow subscriber", "%v", err)
		}
	}
	if err := slow.end(); err != nil {
		return nil, err
	}
	res.Slow = slow.phase()

	after := newPhaseAcc(cfg.PID)
	after.begin()
	for i := 0; i < cfg.Signals; i++ {
		if err := r.signalWant(phaseAfter, n-1, n-1, after); err != nil {
			return nil, err
		}
	}
	if err := after.end(); err != nil {
		return nil, err
	}
	res.After = after.phase()

	if res.SlowPending, err = r.drainClosed(slowConn, watch); err != nil {
		return nil, err
	}
	res.Unstamped = r.unstampedPushes()
	return res, nil
}

// signalWant is signal with exactly want receivers in the reply.
func (r *run) signalWant(phase byte, readers, want int, acc *phaseAcc) error {
	got, err := r.signal(phase, readers, acc)
	if err == nil && got != int64(want) {
		err = r.errorf("publisher", "signal %d answered %d receivers, want %d", r.next-1, got, want)
	}
	return err
}

// signal sends the next signal, waits for its reply and for subscribers
// 0..readers-1 to read it, and records it in acc. It returns the receiver
// count the server answered.
func (r *run) signal(phase byte, readers int, acc *phaseAcc) (int64, error) {
	seq := r.next
	r.next++
	r.cur.phase.Store(uint32(phase))
	r.cur.seq.Store(seq)
	r.cur.remaining.Store(int64(readers))
	deadline := time.Now().Add(r.cfg.Timeout)
	_ = r.pub.SetDeadline(deadline)
	sent := time.Now().UnixNano()
	b := append(r.wbuf[:0], "signal\n"...)
	b = append(b, r.cfg.Channel...)
	b = append(b, '\n')
	b = appendPayload(b, seq, phase, sent, r.cfg.Payload)
	b = append(b, '\n')
	r.wbuf = b
	if _, err := r.pub.Write(b); err != nil {
		return 0, r.errorf("publisher", "signal %d: %v", seq, connErr(err))
	}
	got, err := r.receivers()
	if err != nil {
		return 0, err
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-r.cur.done:
	case <-r.failed:
		return 0, r.err
	case <-timer.C:
		return 0, r.errorf("publisher", "signal %d: %d of %d readers had not received it after %v",
			seq, r.cur.remaining.Load(), readers, r.cfg.Timeout)
	}
	common := r.cfg.Subscribers - 1
	var last int64
	for i := 0; i < readers; i++ {
		st := r.cur.stamp[i]
		if i < common {
			acc.receipt.Record(st)
			acc.read.Record(r.cur.read[i])
		}
		last = max(last, st)
	}
	acc.last.Record(last)
	acc.signals++
	acc.deliveries += got
	return got, nil
}

// receivers reads one "ok <n>" reply on the publisher connection.
func (r *run) receivers() (int64, error) {
	line, err := r.pubR.ReadSlice('\n')
	if err != nil {
		return 0, r.errorf("publisher", "reading the reply to signal %d: %v", r.next-1, connErr(err))
	}
	line = line[:len(line)-1]
	if v, ok := parseReceivers(line); ok {
		return v, nil
	}
	e := r.errorf("publisher", "want \"ok <receivers>\" to signal %d", r.next-1).(*Error)
	e.Line = string(line)
	return 0, e
}

// parseReceivers parses the reply to a signal, "ok <receivers>".
func parseReceivers(line []byte) (int64, bool) {
	if len(line) < 3 || string(line[:3]) != "ok " {
		return 0, false
	}
	return parseUint(line[3:])
}

// subscribe dials every subscriber and has it listen on the channel.
func (r *run) subscribe() error {
	r.subs = make([]*subscriber, r.cfg.Subscribers)
	for i := range r.subs {
		nc, err := r.dial()
		if err != nil {
			return err
		}
		rx, err := newRxConn(nc.(*net.TCPConn))
		if err != nil {
			return r.errorf(fmt.Sprintf("subscriber %d", i), "%v", err)
		}
		s := &subscriber{id: i, r: r, nc: nc.(*net.TCPConn), rx: rx, buf: make([]byte, subBufSize), replies: make(chan string, 1)}
		s.listening.Store(true)
		r.subs[i] = s
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			s.read()
		}()
	}
	for _, s := range r.subs {
		if err := r.request(s, "listen\n"+r.cfg.Channel+"\n\n"); err != nil {
			return err
		}
	}
	return nil
}

// request sends req on s's connection and wants "ok" back.
func (r *run) request(s *subscriber, req string) error {
	who := fmt.Sprintf("subscriber %d", s.id)
	_ = s.nc.SetWriteDeadline(time.Now().Add(r.cfg.Timeout))
	if _, err := s.nc.Write([]byte(req)); err != nil {
		return r.errorf(who, "%v", connErr(err))
	}
	timer := time.NewTimer(r.cfg.Timeout)
	defer timer.Stop()
	select {
	case line := <-s.replies:
		if line != "ok" {
			e := r.errorf(who, "want \"ok\" to %q", req).(*Error)
			e.Line = line
			return e
		}
		return nil
	case <-r.failed:
		return r.err
	case <-timer.C:
		return r.errorf(who, "no reply to %q within %v", req, r.cfg.Timeout)
	}
}

func (r *run) dial() (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", r.cfg.Addr, r.cfg.Timeout)
	if err != nil {
		return nil, r.errorf("dial", "%v", err)
	}
	if !r.track(nc) {
		return nil, r.err
	}
	return nc, nil
}

// track registers nc for closing; false if the run has already failed.
func (r *run) track(nc net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping.Load() {
		_ = nc.Close()
		return false
	}
	r.conns = append(r.conns, nc)
	return true
}

// fail records the run's first error and closes every connection, which
// unblocks every goroutine.
func (r *run) fail(err error) {
	r.failOnce.Do(func() {
		r.err = err
		close(r.failed)
		r.closeConns()
	})
}

func (r *run) closeConns() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping.Store(true)
	for _, c := range r.conns {
		_ = c.Close()
	}
}

func (r *run) close() {
	r.closeConns()
	r.wg.Wait()
}

func (r *run) errorf(who, format string, args ...any) error {
	return &Error{Target: r.cfg.Name, Who: who, Err: fmt.Errorf(format, args...)}
}
