package loop

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Limits of the transport.
const (
	// maxBlockedInput: dflockd closes a blocked connection once its 4 KiB
	// read buffer fills with pipelined bytes (spec §A.6).
	maxBlockedInput = 4096
	// authCooldown delays the close after a failed auth (spec §B.13).
	authCooldown = 100 * time.Millisecond
)

// Config tunes a Server. The zero value of each field means its default.
type Config struct {
	Addr            string        // "tcp://127.0.0.1:6388"
	Loops           int           // event loops; default runtime.NumCPU()
	ReadTimeout     time.Duration // per-line read deadline; default 23 s
	WriteTimeout    time.Duration // unsent replies older than this close the connection; 0 = off
	MaxConnections  int           // 0 = unlimited
	AuthToken       string        // "" = no auth handshake
	GCInterval      time.Duration // idle-key GC period; default 5 s
	ShutdownTimeout time.Duration // 0 = wait for connections forever
	Logf            func(format string, args ...any)
	// Profile is the dflockd release line to answer as (--compat, spec
	// §I): v2 by default; rf puts the fence in grant and renew replies,
	// has no ping and removes CRs anywhere in a line; v1 is v1.10.0
	// (see v1.go).
	Profile parse.Profile
	// GodistlockAddr, if set, is a second listener ("tcp://host:port",
	// fixed port) speaking the godistlock client protocol to the same
	// engine (godistlock.go). GodistlockID and Version are the <id> and
	// <version> of its HELLO replies; defaults: the host name, "dev".
	GodistlockAddr string
	GodistlockID   string
	Version        string
	// Ready, if set, is closed once the listener accepts connections.
	Ready chan<- struct{}
}

// Server is a running dflockd protocol endpoint over one engine.
type Server struct {
	gnet.BuiltinEventEngine
	cfg    Config
	eng    *engine.Engine
	clock  timerwheel.Clock
	timers *timerwheel.Driver // drives every loop's read deadlines

	mu struct {
		sync.Mutex
		loops map[gnet.EventLoop]*loopState
		gnet  gnet.Engine
		boot  bool
	}
	loopList []*loopState // by read-timer target index; filled by loopFor (guarded by mu)
	conns    atomic.Int64
	draining atomic.Bool
	rtMs     int64 // read timeout in ms
	wtMs     int64 // write timeout in ms, 0 = off
	gate     *authGate
	// frame splits the next request off the input: the profile's line caps.
	frame  func([]byte) (parse.Frame, int, error)
	gdPort int // local port of the godistlock listener, 0 = none
}

// New prepares a server. The engine delivers to it, so build the engine
// with the Server as its Notifier and attach it before Serve:
//
//	srv := loop.New(cfg, clock)
//	eng := engine.New(ecfg, srv)
//	srv.Attach(eng)
func New(cfg Config, clock timerwheel.Clock) *Server {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.NumCPU()
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 23 * time.Second
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	gdDefaults(&cfg)
	s := &Server{cfg: cfg, clock: clock, rtMs: cfg.ReadTimeout.Milliseconds(), wtMs: cfg.WriteTimeout.Milliseconds(), gate: newAuthGate()}
	s.mu.loops = make(map[gnet.EventLoop]*loopState)
	s.frame = parse.Next
	if cfg.Profile == parse.ProfileV1 {
		s.frame = parse.NextCountingCR
	}
	return s
}

// Attach connects the engine whose Notifier is s.
func (s *Server) Attach(e *engine.Engine) { s.eng = e }

// Deliver implements engine.Notifier: the event goes to the inbox of the
// loop that owns the session's connection.
func (s *Server) Deliver(sess *engine.Session, r engine.Result) {
	cs := sess.Owner.(*conn)
	if r.Kind == engine.KindPush {
		cs.backlog.queued.Add(int64(len(r.Value) + 1))
	}
	cs.lp.push(delivery{cs: cs, result: r})
}

// Serve runs the event loops until Shutdown; it blocks.
func (s *Server) Serve() error {
	if s.eng == nil {
		panic("loop: Serve before Attach")
	}
	// One read-deadline target per loop; loops are matched to targets as
	// gnet reveals them (OnOpen), see loopFor.
	s.loopList = make([]*loopState, s.cfg.Loops)
	targets := make([]timerwheel.Target, s.cfg.Loops)
	for i := range targets {
		targets[i] = lazyTarget{s, i}
	}
	s.timers = timerwheel.NewDriver(s.clock, targets)
	s.timers.Start()
	defer s.timers.Stop()
	addrs, err := s.listenAddrs() // one, or two with godistlock
	if err != nil {
		return err
	}
	return gnet.Rotate(s, addrs,
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.cfg.Loops),
		gnet.WithLoadBalancing(gnet.RoundRobin),
		// Reuse-port would let a second daemon bind the same port and split
		// the lock table; reuse-addr allows quick restarts.
		gnet.WithReuseAddr(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithTCPKeepAlive(30*time.Second),
		gnet.WithTicker(true),
		gnet.WithLogger(quietLogger{s.cfg.Logf}),
	)
}

// lazyTarget forwards the driver to a loop's read timer once that loop is
// known; before that it has no deadlines.
type lazyTarget struct {
	s *Server
	i int
}

func (t lazyTarget) Expire(now timerwheel.Instant) (timerwheel.Tick, bool) {
	t.s.mu.Lock()
	lp := t.s.loopList[t.i]
	t.s.mu.Unlock()
	if lp == nil {
		return 0, false
	}
	return lp.rt.Expire(now)
}

// loopFor returns the state of the loop that owns c, creating it on the
// loop's first connection.
func (s *Server) loopFor(c gnet.Conn) *loopState {
	el := c.EventLoop()
	s.mu.Lock()
	defer s.mu.Unlock()
	lp := s.mu.loops[el]
	if lp == nil {
		lp = newLoopState(s, el)
		lp.rt.index = len(s.mu.loops)
		if lp.rt.index >= len(s.loopList) {
			panic(fmt.Sprintf("loop: gnet started more loops than the %d configured", len(s.loopList)))
		}
		s.mu.loops[el] = lp
		s.loopList[lp.rt.index] = lp
	}
	return lp
}

// OnBoot records the gnet engine and signals readiness.
func (s *Server) OnBoot(e gnet.Engine) gnet.Action {
	s.mu.Lock()
	s.mu.gnet = e
	s.mu.boot = true
	s.mu.Unlock()
	if s.cfg.Ready != nil {
		close(s.cfg.Ready)
	}
	return gnet.None
}

// OnOpen admits a connection or closes it silently when over
// --max-connections or draining (spec §D.1, §I.31).
func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	n := s.conns.Add(1)
	if (s.cfg.MaxConnections > 0 && n > int64(s.cfg.MaxConnections)) || s.draining.Load() {
		s.conns.Add(-1)
		return nil, gnet.Close
	}
	lp := s.loopFor(c)
	cs := &conn{c: c, lp: lp, srv: s, authed: s.cfg.AuthToken == ""}
	if !cs.authed {
		cs.authKey = gateKey(c.RemoteAddr())
	}
	cs.timer.Owner = cs
	cs.sess = s.eng.NewSession(cs)
	if s.isGodistlock(c) {
		cs.gd = newGDState()
	}
	c.SetContext(cs)
	now := s.clock.Now()
	cs.deadline = now.After(s.rtMs)
	lp.rt.arm(cs, cs.deadline)
	return nil, gnet.None
}

// OnClose runs disconnect cleanup (spec §D.4).
func (s *Server) OnClose(c gnet.Conn, _ error) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok || cs == nil {
		return gnet.None
	}
	c.SetContext(nil)
	cs.closed = true
	cs.lp.rt.stop(cs)
	s.eng.Close(cs.sess)
	s.conns.Add(-1)
	return gnet.None
}

// OnTraffic is the request path; see conn.onTraffic.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok || cs == nil {
		return gnet.Close
	}
	cs.lp.beginTraffic()
	action := cs.onTraffic()
	cs.lp.endTraffic()
	return action
}

// OnTick runs housekeeping on gnet's ticker goroutine: idle-key GC.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	s.eng.GC()
	return s.cfg.GCInterval, gnet.None
}

// Connections reports open client connections.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Shutdown drains (spec §D.5): new requests get error_draining and a
// close, parked operations get error, and the loops stop once every
// connection has gone or the shutdown timeout (or ctx) ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.eng.Drain()
	if s.cfg.ShutdownTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
		defer cancel()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for s.conns.Load() > 0 {
		select {
		case <-ctx.Done():
			s.cfg.Logf("shutdown: closing %d remaining connections", s.conns.Load())
			return s.stopGnet()
		case <-tick.C:
		}
	}
	return s.stopGnet()
}

func (s *Server) stopGnet() error {
	s.mu.Lock()
	e, boot := s.mu.gnet, s.mu.boot
	s.mu.Unlock()
	if !boot {
		return errors.New("loop: shutdown before the server started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.Stop(ctx)
}

// quietLogger routes gnet's logging to our Logf.
type quietLogger struct {
	logf func(format string, args ...any)
}

func (l quietLogger) Debugf(string, ...any)     {}
func (l quietLogger) Infof(string, ...any)      {}
func (l quietLogger) Warnf(f string, a ...any)  { l.logf("gnet: "+f, a...) }
func (l quietLogger) Errorf(f string, a ...any) { l.logf("gnet: "+f, a...) }
func (l quietLogger) Fatalf(f string, a ...any) { l.logf("gnet: "+f, a...) }
