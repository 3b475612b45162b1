package loop

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Config tunes a Server. The zero value of each field means its default.
type Config struct {
	Addr            string        // "tcp://127.0.0.1:6388"
	Loops           int           // event loops; default runtime.NumCPU()
	MaxConnections  int           // 0 = unlimited
	GCInterval      time.Duration // idle-key GC period; default 5 s
	ShutdownTimeout time.Duration // 0 = wait for connections forever
	Logf            func(format string, args ...any)
	// GodistlockAddr, if set, is a second listener ("tcp://host:port",
	// fixed port) speaking the godistlock client protocol to the same
	// engine (session's godistlock codec).
	GodistlockAddr string
	// Ready, if set, is closed once the listener accepts connections.
	Ready chan<- struct{}

	// The protocol sessions' settings (session.Config), here for
	// convenience: ReadTimeout (default 23 s), WriteTimeout (0 = off),
	// AuthToken, Profile (--compat), GodistlockID and Version (HELLO).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	AuthToken    string
	Profile      parse.Profile
	GodistlockID string
	Version      string
	// FenceStats, if set, adds the fence state to stats documents.
	FenceStats func() *parse.FenceStat

	// Engine configures the engine the server builds; its Profile is
	// Config.Profile, its Start and OnDeadline are the server's, and a
	// zero TokenKey is replaced by a random one.
	Engine engine.Config
}

// Server is a running dflockd protocol endpoint: gnet event loops, the
// engine, its timers, and the protocol sessions of its connections.
type Server struct {
	gnet.BuiltinEventEngine
	cfg    Config
	eng    *engine.Engine
	hub    *session.Hub
	clock  timerwheel.Clock
	timers *timerwheel.Driver // drives every loop's session timers
	// engTimers drives the engine's shard timers; the engine tells it of
	// new deadlines through Config.OnDeadline.
	engTimers *timerwheel.Driver
	engFx     engine.Effects // the engine driver's scratch

	mu struct {
		sync.Mutex
		loops map[gnet.EventLoop]*loopState
		gnet  gnet.Engine
		boot  bool
	}
	loopList []*loopState // by read-timer target index; filled by loopFor (guarded by mu)
	conns    atomic.Int64
	gdPort   int            // local port of the godistlock listener, 0 = none
	quiet    *quietReleaser // OnTick's only
}

// New builds the engine, the session hub and the server.
func New(cfg Config, clock timerwheel.Clock) *Server {
	if cfg.Loops <= 0 {
		cfg.Loops = runtime.NumCPU()
	}
	if cfg.GCInterval <= 0 {
		cfg.GCInterval = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, clock: clock, quiet: newQuietReleaser()}
	s.mu.loops = make(map[gnet.EventLoop]*loopState)
	ecfg := cfg.Engine
	ecfg.Profile = cfg.Profile
	ecfg.Start = clock.Now()
	if ecfg.TokenKey == (engine.TokenKey{}) {
		if _, err := rand.Read(ecfg.TokenKey[:]); err != nil {
			panic("loop: no randomness for the token key: " + err.Error())
		}
	}
	// The engine tells the driver of deadlines from its first command on;
	// the driver needs the engine's shard count: hence the indirection.
	var drv atomic.Pointer[timerwheel.Driver]
	ecfg.OnDeadline = func(i int, at timerwheel.Tick) { drv.Load().Notify(i, at) }
	s.eng = engine.New(ecfg)
	targets := make([]timerwheel.Target, s.eng.Shards())
	for i := range targets {
		targets[i] = shardTarget{s, i}
	}
	s.engTimers = timerwheel.NewDriver(clock, targets)
	drv.Store(s.engTimers)
	s.hub = session.NewHub(session.Config{
		Profile: cfg.Profile, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
		AuthToken: cfg.AuthToken, GodistlockID: cfg.GodistlockID, Version: cfg.Version,
		FenceStats: cfg.FenceStats,
	}, s.eng, clock)
	return s
}

// shardTarget drives one engine shard's timers through the hub, which
// routes what they did.
type shardTarget struct {
	s *Server
	i int
}

// Expire runs on the engine driver's goroutine only, so engFx is its own.
func (t shardTarget) Expire(timerwheel.Instant) (timerwheel.Tick, bool) {
	return t.s.hub.Advance(t.i, &t.s.engFx)
}

// Engine returns the server's engine.
func (s *Server) Engine() *engine.Engine { return s.eng }

// Hub returns the server's session hub.
func (s *Server) Hub() *session.Hub { return s.hub }

// Serve runs the event loops until Shutdown; it blocks.
func (s *Server) Serve() error {
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
	s.engTimers.Start()
	defer s.engTimers.Stop()
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
	if (s.cfg.MaxConnections > 0 && n > int64(s.cfg.MaxConnections)) || s.hub.Draining() {
		s.conns.Add(-1)
		return nil, gnet.Close
	}
	cs := &conn{c: c, lp: s.loopFor(c)}
	proto := session.Dflockd
	if s.isGodistlock(c) {
		proto = session.Godistlock
	}
	c.SetContext(cs)
	cs.sess = s.hub.Open(cs, proto)
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
	cs.sess.Closed()
	cs.lp.scratch.Trim()
	s.conns.Add(-1)
	return gnet.None
}

// OnTraffic is the request path; see conn.traffic.
func (s *Server) OnTraffic(c gnet.Conn) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok || cs == nil {
		return gnet.Close
	}
	cs.lp.traffic.Add(1)
	cs.lp.beginTraffic()
	action := cs.traffic()
	cs.lp.endTraffic()
	cs.lp.scratch.Trim()
	return action
}

// OnTick runs housekeeping on gnet's ticker goroutine: idle-key GC, and
// the heap handed back once the server is quiet.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	s.hub.GC()
	s.quiet.tick(s.traffic())
	return s.cfg.GCInterval, gnet.None
}

// Connections reports open client connections.
func (s *Server) Connections() int { return int(s.conns.Load()) }

// Shutdown drains (spec §D.5): parked operations get error, new requests
// error_draining and a close (v1: they go on being served), and the loops
// stop once every connection has gone or the shutdown timeout (or ctx)
// ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.hub.Drain()
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

// listenAddrs returns the gnet listener addresses and records which local
// port is the godistlock one, for OnOpen.
func (s *Server) listenAddrs() ([]string, error) {
	if s.cfg.GodistlockAddr == "" {
		return []string{s.cfg.Addr}, nil
	}
	_, port, err := net.SplitHostPort(strings.TrimPrefix(s.cfg.GodistlockAddr, "tcp://"))
	if err == nil {
		s.gdPort, err = strconv.Atoi(port)
	}
	if err != nil || s.gdPort <= 0 {
		return nil, fmt.Errorf("loop: godistlock address %q needs a fixed TCP port", s.cfg.GodistlockAddr)
	}
	return []string{s.cfg.Addr, s.cfg.GodistlockAddr}, nil
}

// isGodistlock reports whether c came in on the godistlock listener.
func (s *Server) isGodistlock(c gnet.Conn) bool {
	if s.gdPort == 0 {
		return false
	}
	a, ok := c.LocalAddr().(*net.TCPAddr)
	return ok && a.Port == s.gdPort
}

// quietLogger routes gnet's logging to our Logf.
type quietLogger struct {
	logf func(format string, args ...any)
}

func (l quietLogger) Debugf(string, ...any) {}
func (l quietLogger) Infof(string, ...any)  {}
func (l quietLogger) Warnf(f string, a ...any) {
	if strings.Contains(f, "of a stale connection") {
		// An event for a socket closed earlier in the same epoll batch
		// (a write to a peer that hung up closes it at once): gnet drops
		// it; nothing for an operator to act on, and a mass disconnect
		// would print one line per socket.
		return
	}
	l.logf("gnet: "+f, a...)
}
func (l quietLogger) Errorf(f string, a ...any) { l.logf("gnet: "+f, a...) }
func (l quietLogger) Fatalf(f string, a ...any) { l.logf("gnet: "+f, a...) }
