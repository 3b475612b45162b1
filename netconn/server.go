package netconn

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Config tunes a Server. The zero value of each field means its default.
type Config struct {
	// TLS, if set, makes every accepted connection a TLS server
	// connection (tlscert.Store.Config); nil serves plain TCP.
	TLS *tls.Config
	// HandshakeTimeout bounds the TLS handshake; a client that has not
	// completed it by then is closed. Default: 23 s, dflockd's default
	// read timeout, under which dflockd's lazy handshake runs (pass the
	// configured --read-timeout: the Hub does not tell it).
	HandshakeTimeout time.Duration
	// Limiter admits connections (--max-connections,
	// --max-connections-per-ip), shared with the server's other
	// listeners; nil admits all. A refused connection is closed without
	// a reply (spec §D.1).
	Limiter *conncap.Limiter
	// Events, if set, logs refused connections and failed handshakes,
	// rate limited (the sessions' incidents go to session.Config.Events).
	Events *ratelog.Logger
	// QuietInterval is how often the server looks for a quiet spell (no
	// read for a whole interval) to hand the free heap back to the OS
	// (release.go): pass --gc-interval, as the gnet loops use. Default
	// 5 s; negative: never.
	QuietInterval time.Duration
	// Count counts the connections' requests for /metrics
	// (session.Counters, registered with the hub from New to Close or
	// Shutdown).
	Count bool
	Logf  func(format string, args ...any)
}

// defaultHandshakeTimeout is the session package's default read timeout.
const defaultHandshakeTimeout = 23 * time.Second

// Accept errors back off from acceptBackoffMin to acceptBackoffMax, as
// dflockd v1.15+ (spec §D.1): running out of descriptors must not spin.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// Server serves protocol sessions of a hub over the connections of one
// or more listeners.
type Server struct {
	hub    *session.Hub
	cfg    Config
	clock  timerwheel.Clock
	shards []*timerShard
	driver *timerwheel.Driver

	mu struct {
		sync.Mutex
		listeners map[net.Listener]struct{}
		conns     map[*conn]struct{}
		closed    bool          // Shutdown or Close began: accept nothing more
		started   bool          // the driver runs (from the first Serve)
		allGone   chan struct{} // closed when conns empties after closed
	}
	nconns   atomic.Int64
	nextConn atomic.Uint64 // spreads connections over the timer shards
	// wg counts the goroutines of every connection; bg the server's own
	// (releaseWhenQuiet).
	wg       sync.WaitGroup
	bg       sync.WaitGroup
	quit     chan struct{} // closed by Shutdown and Close: accept backoffs end
	stopOnce sync.Once
}

// New returns a server of hub's sessions. It starts nothing until Serve.
func New(hub *session.Hub, cfg Config) *Server {
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = defaultHandshakeTimeout
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.QuietInterval == 0 {
		cfg.QuietInterval = defaultQuietInterval
	}
	s := &Server{hub: hub, cfg: cfg, clock: hub.Clock(), quit: make(chan struct{})}
	s.mu.listeners = make(map[net.Listener]struct{})
	s.mu.conns = make(map[*conn]struct{})
	now := s.clock.Now().Tick()
	n := min(runtime.GOMAXPROCS(0), 16)
	targets := make([]timerwheel.Target, n)
	for i := range n {
		sh := newTimerShard(s, i, now)
		if cfg.Count {
			sh.counters = new(session.Counters)
			hub.RegisterCounters(sh.counters)
		}
		s.shards = append(s.shards, sh)
		targets[i] = sh
	}
	s.driver = timerwheel.NewDriver(s.clock, targets)
	return s
}

// Hub returns the server's session hub.
func (s *Server) Hub() *session.Hub { return s.hub }

// Serve accepts connections on l and serves sessions of protocol p on
// them until l is closed (by Shutdown, Close or its owner): it then
// returns nil. A server may serve several listeners at once. Temporary
// accept errors (out of descriptors) back off and retry; another error
// is returned.
func (s *Server) Serve(l net.Listener, p session.Protocol) error {
	if !s.track(l) {
		_ = l.Close()
		return nil
	}
	defer s.untrack(l)
	var backoff time.Duration
	for {
		raw, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.isClosed() {
				return nil
			}
			if !temporary(err) {
				return err
			}
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			s.cfg.Logf("netconn: accept: %v; retrying in %v", err, backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return nil
			}
			continue
		}
		backoff = 0
		s.admit(raw, p)
	}
}

// temporary reports whether an accept error may go away by itself
// (EMFILE, ENFILE, ECONNABORTED...), as net/http judges it.
func temporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// admit starts serving an accepted connection, or closes it silently:
// over a connection cap (spec §D.1), or draining (the listener is being
// closed, spec §D.5).
func (s *Server) admit(raw net.Conn, p session.Protocol) {
	remote := raw.RemoteAddr()
	if s.hub.Draining() {
		_ = raw.Close()
		return
	}
	if s.cfg.Limiter != nil && !s.cfg.Limiter.Admit(remote) {
		s.cfg.Events.Warn("connection refused: --max-connections or --max-connections-per-ip reached",
			"remote", remote.String())
		_ = raw.Close()
		return
	}
	c := &conn{
		srv: s, raw: raw, nc: raw, remote: remote, proto: p,
		shard:  s.shards[s.nextConn.Add(1)%uint64(len(s.shards))],
		signal: make(chan struct{}, 1),
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		s.release(remote)
		_ = raw.Close()
		return
	}
	s.mu.conns[c] = struct{}{}
	s.nconns.Add(1)
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// forget drops a connection that has ended.
func (s *Server) forget(c *conn) {
	s.release(c.remote)
	s.mu.Lock()
	delete(s.mu.conns, c)
	s.nconns.Add(-1)
	if s.mu.closed && len(s.mu.conns) == 0 && s.mu.allGone != nil {
		close(s.mu.allGone)
		s.mu.allGone = nil
	}
	s.mu.Unlock()
}

func (s *Server) release(remote net.Addr) {
	if s.cfg.Limiter != nil {
		s.cfg.Limiter.Release(remote)
	}
}

// Connections reports the open connections, handshaking ones included.
func (s *Server) Connections() int { return int(s.nconns.Load()) }

// track registers a listener, starting the timer driver with the first;
// false once the server is closed.
func (s *Server) track(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	if !s.mu.started {
		s.mu.started = true
		s.driver.Start()
		if s.cfg.QuietInterval > 0 {
			s.bg.Add(1)
			go s.releaseWhenQuiet(s.cfg.QuietInterval)
		}
	}
	s.mu.listeners[l] = struct{}{}
	return true
}

func (s *Server) untrack(l net.Listener) {
	s.mu.Lock()
	delete(s.mu.listeners, l)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.closed
}

// stopAccepting closes the listeners (Serve returns) and returns a
// channel closed once no connection is left.
func (s *Server) stopAccepting() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.mu.closed {
		s.mu.closed = true
		close(s.quit)
	}
	for l := range s.mu.listeners {
		_ = l.Close()
	}
	gone := make(chan struct{})
	if len(s.mu.conns) == 0 {
		close(gone)
	} else {
		if s.mu.allGone != nil {
			// An earlier Shutdown waits too: one channel serves both.
			return s.mu.allGone
		}
		s.mu.allGone = gone
	}
	return gone
}

// Shutdown is the TLS side of a graceful drain (spec §D.5), as
// loop.Server.Shutdown: the hub drains (unless it already does: parked
// requests end with error, new requests of v2 and rf get error_draining
// and a close, v1 connections go on being served), the listeners close,
// and Shutdown waits for the connections to end until ctx is done; then
// it closes those left. It returns once every connection's goroutines
// have ended.
func (s *Server) Shutdown(ctx context.Context) error {
	if !s.hub.Draining() {
		s.hub.Drain()
	}
	gone := s.stopAccepting()
	select {
	case <-gone:
	case <-ctx.Done():
		s.cfg.Logf("netconn: shutdown: closing %d remaining connections", s.closeAll())
	}
	s.wg.Wait()
	s.stopped()
	return nil
}

// Close closes the listeners and every connection now, without a drain,
// and returns once their goroutines have ended.
func (s *Server) Close() error {
	s.stopAccepting()
	s.closeAll()
	s.wg.Wait()
	s.stopped()
	return nil
}

// stopped ends what outlives the connections: the timer driver, the
// quiet releaser and the counters' registration (their counts stay in the hub's sum). Once.
func (s *Server) stopped() {
	s.driver.Stop()
	s.bg.Wait() // quit is closed: releaseWhenQuiet returns
	s.stopOnce.Do(func() {
		for _, sh := range s.shards {
			if sh.counters != nil {
				s.hub.RetireCounters(sh.counters)
			}
		}
	})
}

// closeAll closes every connection's socket: their owners see it and end
// their sessions (disconnect cleanup, spec §D.4).
func (s *Server) closeAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.mu.conns {
		c.abort()
	}
	return len(s.mu.conns)
}
