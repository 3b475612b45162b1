package loadgen

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Result is the outcome of a successful run. Rates are per second of the
// measured window.
type Result struct {
	Target   string   `json:"target"`
	Proto    string   `json:"proto"`
	Workload Workload `json:"workload"`
	Conns    int      `json:"conns"`
	Depth    int      `json:"depth"`
	TLS      bool     `json:"tls"` // the connections were TLS

	Window      time.Duration `json:"window_ns"`
	Requests    uint64        `json:"requests"`
	Pairs       uint64        `json:"pairs"`  // acquire+release cycles that both succeeded
	Misses      uint64        `json:"misses"` // try-acquires refused (valid, not errors)
	Errors      int           `json:"errors"` // always 0 in a returned Result
	RequestRate float64       `json:"requests_per_s"`
	PairRate    float64       `json:"pairs_per_s"`
	IdleConns   int           `json:"idle_conns"` // connections with no reply in the window

	Latency     Summary `json:"latency"`      // per request
	PairLatency Summary `json:"pair_latency"` // first request written → release reply read
}

// Run runs one load against one target and returns its result, or a
// *RunError if any reply was wrong or any connection failed. The run is
// bounded by cfg.Warmup+cfg.Duration (plus dialing); cancelling ctx aborts
// it early with ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	seed, err := randomSeed()
	if err != nil {
		return nil, err
	}
	if cfg.Proto == ProtoRedis || cfg.Workload.Primitive() {
		// Redis has no release on disconnect: the locks a run holds when it
		// stops stay until their PX expires, so every Redis run needs keys
		// of its own. Counters, KV entries and lists outlive a run on any
		// server (a run cut between rpush and lpop leaves an item), and their
		// replies are checked against values that assume fresh keys.
		// (dflockd servers release locks on disconnect and cap the number
		// of lock keys, so lock runs there reuse their keys.)
		cfg.KeyPrefix += "." + strconv.FormatUint(seed>>32, 36)
	}
	sc := newScript(cfg)

	workers := make([]*worker, cfg.Conns)
	closeAll := func() {
		for _, w := range workers {
			if w != nil {
				_ = w.nc.Close()
			}
		}
	}
	defer closeAll()
	dial := dialer(cfg)
	var abort atomic.Bool
	for i := range workers {
		nc, err := dial(ctx)
		if err != nil {
			return nil, &RunError{Target: cfg.Name, Conn: i, Err: fmt.Errorf("dial %s: %w", cfg.Addr, err), Errors: 1}
		}
		workers[i] = newWorker(cfg, i, nc, sc, seed, &abort)
		if len(cfg.Tokens) > 0 {
			if err := authenticate(nc, cfg.Tokens[i%len(cfg.Tokens)], cfg.DialTimeout); err != nil {
				return nil, &RunError{Target: cfg.Name, Conn: i, Req: "auth _ <token>", Err: err, Errors: 1}
			}
		}
	}

	// The run clock starts once every connection is open, so dialing is
	// neither in the warm-up nor in the window.
	base := time.Now()
	start, end := int64(cfg.Warmup), int64(cfg.Warmup+cfg.Duration)
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for _, w := range workers {
		w.base, w.start, w.end = base, start, end
		// One absolute deadline bounds every read and write, so a
		// connection blocked on a queued acquire stops at the end of the
		// window too. It is set here, before any worker runs, so that a
		// stopAll (cancel, another worker's error) always comes after it.
		if err := w.nc.SetDeadline(base.Add(time.Duration(end))); err != nil {
			return nil, w.connError(err)
		}
	}
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.run(); err != nil {
				errs[i] = err
				stopAll(workers, &abort)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	hooks := windowHooks(cfg, base, done, &abort)
	select {
	case <-done:
	case <-ctx.Done():
		stopAll(workers, &abort)
		<-done
		<-hooks
		return nil, &RunError{Target: cfg.Name, Conn: -1, Err: ctx.Err(), Errors: 0}
	}
	<-hooks

	var first *RunError
	failed := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		failed++
		if first == nil {
			first = err.(*RunError)
		}
	}
	if first != nil {
		first.Errors = failed
		return nil, first
	}
	return merge(cfg, workers), nil
}

// dialer returns what opens one connection of the run: TCP, and a TLS
// handshake over it when cfg.TLS is set, all within cfg.DialTimeout.
func dialer(cfg Config) func(context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: cfg.DialTimeout}
	if cfg.TLS == nil {
		return func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", cfg.Addr) }
	}
	tc := cfg.TLS.Clone()
	if tc.ServerName == "" && !tc.InsecureSkipVerify {
		tc.ServerName, _, _ = net.SplitHostPort(cfg.Addr)
	}
	return func(ctx context.Context) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		defer cancel()
		nc, err := d.DialContext(ctx, "tcp", cfg.Addr)
		if err != nil {
			return nil, err
		}
		c := tls.Client(nc, tc)
		if err := c.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		return c, nil
	}
}

// authenticate sends connection nc's auth line and wants "ok", within
// timeout. It reads byte by byte, so nothing after the reply is consumed
// (the server sends nothing more before the first request anyway).
func authenticate(nc net.Conn, token string, timeout time.Duration) error {
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := nc.Write([]byte("auth\n_\n" + token + "\n")); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	var line []byte
	var b [1]byte
	for len(line) < 64 {
		if _, err := nc.Read(b[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("auth: connection closed by the target (reply so far %q)", line)
			}
			return fmt.Errorf("auth: %w (reply so far %q)", err, line)
		}
		if b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	if string(line) != "ok" {
		return fmt.Errorf("auth: reply %q, want \"ok\"", line)
	}
	return nc.SetDeadline(time.Time{})
}

// windowHooks calls cfg's window callbacks on time (measured on the run
// clock) unless the run ended or was aborted before. The returned channel
// is closed when no callback can run any more.
func windowHooks(cfg Config, base time.Time, done <-chan struct{}, abort *atomic.Bool) <-chan struct{} {
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for _, h := range []struct {
			at time.Duration
			fn func()
		}{{cfg.Warmup, cfg.OnWindowStart}, {cfg.Warmup + cfg.Duration, cfg.OnWindowEnd}} {
			if h.fn == nil {
				continue
			}
			timer := time.NewTimer(time.Until(base.Add(h.at)))
			select {
			case <-timer.C:
			case <-done:
				timer.Stop()
				if h.at < cfg.Warmup+cfg.Duration || abort.Load() {
					return
				}
				// Workers stop at the end of the window, maybe a hair
				// before this timer: the end still deserves its sample.
			}
			if abort.Load() {
				return
			}
			h.fn()
		}
	}()
	return finished
}

// stopAll makes every connection's pending read or write return at once.
func stopAll(workers []*worker, abort *atomic.Bool) {
	if abort.Swap(true) {
		return
	}
	now := time.Now()
	for _, w := range workers {
		_ = w.nc.SetDeadline(now)
	}
}

func newWorker(cfg Config, id int, nc net.Conn, sc script, seed uint64, abort *atomic.Bool) *worker {
	w := &worker{
		id:       id,
		target:   cfg.Name,
		nc:       nc,
		sc:       sc,
		parse:    ParseLine,
		abort:    abort,
		slots:    make([]slot, cfg.Depth),
		fifo:     newRing(cfg.Depth),
		pending:  make([]int32, 0, cfg.Depth),
		rbuf:     make([]byte, readBufSize),
		wbuf:     make([]byte, 0, cfg.Depth*maxRequest),
		reqHist:  new(Histogram),
		pairHist: new(Histogram),
	}
	if cfg.Proto == ProtoRedis {
		w.parse = ParseRESP
	}
	for j := range w.slots {
		s := &w.slots[j]
		s.conn, s.idx = id, j
		s.ownKey = []byte(cfg.KeyPrefix + ".c" + strconv.Itoa(id) + ".s" + strconv.Itoa(j))
		s.rng = splitmix64(seed ^ uint64(id)<<20 ^ uint64(j))
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], s.rng)
		var v2 [8]byte
		binary.BigEndian.PutUint64(v2[:], splitmix64(s.rng))
		s.value = hex.AppendEncode(hex.AppendEncode(nil, v[:]), v2[:])
		s.rng |= 1 // xorshift must not start at 0
		if cfg.Workload.Primitive() {
			s.keys = make([][]byte, cfg.KeysPerSlot)
			for k := range s.keys {
				s.keys[k] = []byte(string(s.ownKey) + ".k" + strconv.Itoa(k))
			}
			s.counts = make([]int64, cfg.KeysPerSlot)
			s.kidx = len(s.keys) - 1 // begin advances first: the first cycle uses key 0
		}
	}
	return w
}

func randomSeed() (uint64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("loadgen: seed: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

func merge(cfg Config, workers []*worker) *Result {
	req, pair := new(Histogram), new(Histogram)
	r := &Result{
		Target:   cfg.Name,
		Proto:    cfg.Proto.String(),
		Workload: cfg.Workload,
		Conns:    cfg.Conns,
		Depth:    cfg.Depth,
		TLS:      cfg.TLS != nil,
		Window:   cfg.Duration,
	}
	for _, w := range workers {
		req.Merge(w.reqHist)
		pair.Merge(w.pairHist)
		r.Requests += w.reqs
		r.Pairs += w.pairs
		r.Misses += w.misses
		if w.reqs == 0 {
			r.IdleConns++
		}
	}
	secs := cfg.Duration.Seconds()
	r.RequestRate = float64(r.Requests) / secs
	r.PairRate = float64(r.Pairs) / secs
	r.Latency = req.Summarize()
	r.PairLatency = pair.Summarize()
	return r
}

// String formats r as one line for humans.
func (r *Result) String() string {
	proto := r.Proto
	if r.TLS {
		proto += "+tls"
	}
	s := fmt.Sprintf("%-10s %-7s %-5s c=%-4d d=%-3d pairs/s=%-10.0f req/s=%-10.0f p50=%-9v p90=%-9v p99=%-9v p99.9=%-9v max=%-9v",
		r.Target, proto, r.Workload, r.Conns, r.Depth, r.PairRate, r.RequestRate,
		round(r.Latency.P50), round(r.Latency.P90), round(r.Latency.P99), round(r.Latency.P999), round(r.Latency.Max))
	if r.Misses > 0 {
		s += fmt.Sprintf(" misses/s=%.0f", float64(r.Misses)/r.Window.Seconds())
	}
	if r.IdleConns > 0 {
		s += fmt.Sprintf(" idle_conns=%d", r.IdleConns)
	}
	return s + " errors=0"
}

// round keeps three significant figures, which is what the histogram
// resolves anyway.
func round(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond)
	case d >= 10*time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d.Round(10 * time.Nanosecond)
}
