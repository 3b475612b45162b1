package loop

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/internal/quietrelease"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Config tunes a Server. The zero value of each field means its default.
type Config struct {
	Addr           string // "tcp://127.0.0.1:6388"
	Loops          int    // event loops; default runtime.NumCPU()
	MaxConnections int    // 0 = unlimited; ignored when Limiter is set
	// Limiter, if set, admits connections (--max-connections and
	// --max-connections-per-ip), shared with the server's other
	// listeners; else one is made from MaxConnections.
	Limiter *conncap.Limiter
	// Events, if set, logs refused connections and, through the session
	// hub (session.Config.Events), the sessions' incidents; rate limited.
	Events          *ratelog.Logger
	GCInterval      time.Duration // idle-key GC period; default 5 s
	ShutdownTimeout time.Duration // 0 = wait for connections forever
	Logf            func(format string, args ...any)
	// GodistlockAddr, if set, is a second listener ("tcp://host:port")
	// speaking the godistlock client protocol to the same engine
	// (session's godistlock codec).
	GodistlockAddr string
	// Listeners, if set, are bound already and replace Addr and
	// GodistlockAddr: the line protocol's, then godistlock's if any. The
	// server closes them.
	Listeners []net.Listener
	// Guard keeps the listeners up when descriptors run out (fdguard),
	// shared with the process's other listeners; nil: one of the server's
	// own, silent.
	Guard *fdguard.Guard
	// Ready, if set, is closed once the listener accepts connections.
	Ready chan<- struct{}

	// The protocol sessions' settings (session.Config), here for
	// convenience: ReadTimeout (default 23 s), WriteTimeout (0 = off),
	// AuthToken, Profile (--compat), GodistlockID and Version (HELLO).
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	AuthToken    string
	Profile      vocab.Profile
	GodistlockID string
	Version      string

	// Count enables the per-loop request counters a metrics scrape reads
	// (session.Counters, Hub.Counts).
	Count bool

	// Engine configures the engine the server builds; its Profile is
	// Config.Profile, its Start and OnDeadline are the server's, and a
	// zero TokenKey is replaced by a random one (session.NewServerHub).
	Engine engine.Config
	// Hub, if set, is the engine and session hub to serve (shared with
	// other transports); the server then ignores Engine and the session
	// settings above, and the hub's owner runs its housekeeping.
	Hub *session.Hub
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
	watch  *peerWatch         // paused sockets' peers (peerwatch_linux.go); nil: none
	open   openConns          // for Hangup
	// ownHub: the server built its hub and runs its housekeeping.
	ownHub bool

	mu struct {
		sync.Mutex
		loops     map[gnet.EventLoop]*loopState
		gnet      gnet.Engine
		boot      bool
		requested bool  // Shutdown stops the loops: their end is no fault
		fault     error // why serving ended without a Shutdown
	}
	loopList []*loopState // by read-timer target index; filled by loopFor (guarded by mu)
	conns    atomic.Int64
	quiet    *quietrelease.Releaser // OnTick's only
	ln       listeners
	ownGuard *fdguard.Guard // made by bind when the Config has none
	ticked   bool           // OnTick has run: the loops are up (ticker goroutine only)
	unhide   func()         // removes the hidden listener's socket file (OnBoot)
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
	if cfg.Limiter == nil {
		cfg.Limiter = &conncap.Limiter{Max: cfg.MaxConnections}
	}
	s := &Server{cfg: cfg, clock: clock, quiet: quietrelease.New()}
	s.mu.loops = make(map[gnet.EventLoop]*loopState)
	s.hub = cfg.Hub
	if s.hub == nil {
		ecfg := cfg.Engine
		s.hub = session.NewServerHub(session.Config{
			Profile: cfg.Profile, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
			AuthToken: cfg.AuthToken, GodistlockID: cfg.GodistlockID, Version: cfg.Version, Events: cfg.Events,
		}, ecfg, clock, cfg.GCInterval)
		s.ownHub = true
	}
	s.eng = s.hub.Engine()
	return s
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
	s.watch = newPeerWatch()
	defer s.watch.stop()
	if s.ownHub {
		s.hub.Start()
		defer s.hub.Stop()
	}
	if err := s.bind(); err != nil {
		return err
	}
	if s.ownGuard != nil {
		defer s.ownGuard.Close()
	}
	// gnet's only listener is one nobody can reach (accept.go): its loops
	// serve the connections handed to them.
	hidden, unhide := hiddenListener()
	s.unhide = unhide
	defer unhide()
	err := gnet.Rotate(s, []string{hidden},
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.cfg.Loops),
		gnet.WithLoadBalancing(gnet.RoundRobin),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithTicker(true),
		gnet.WithLogger(quietLogger{s.cfg.Logf}),
	)
	s.stopAccepting()
	s.ln.wg.Wait()
	s.open.abortAfterlives() // the loops that would close them are gone
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		return err
	case s.mu.fault != nil:
		return s.mu.fault
	case !s.mu.requested:
		return errLoopsStopped
	}
	return nil
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

// OnBoot records the gnet engine. Its loops are not running yet: the
// first OnTick starts accepting.
//
// A Shutdown that came before it stops gnet here, before any loop runs.
func (s *Server) OnBoot(e gnet.Engine) gnet.Action {
	s.mu.Lock()
	s.mu.gnet = e
	s.mu.boot = true
	requested := s.mu.requested
	s.mu.Unlock()
	s.unhide() // bound: from now on nobody can connect to it
	if requested {
		return gnet.Shutdown
	}
	return gnet.None
}

// OnOpen admits a connection or closes it silently when over
// --max-connections or --max-connections-per-ip, or draining (spec §D.1,
// §I.31).
func (s *Server) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	acc, ok := c.Context().(accepted) // set by acceptLoop
	if !ok {
		return nil, gnet.Close // not from our listeners: the hidden one
	}
	refuse := func() ([]byte, gnet.Action) {
		if acc.wrapped {
			_ = acc.raw.Close()
		}
		return nil, gnet.Close
	}
	if s.hub.Draining() {
		return refuse()
	}
	if !s.cfg.Limiter.Admit(c.RemoteAddr()) {
		s.cfg.Events.Warn("connection refused: --max-connections or --max-connections-per-ip reached",
			"remote", c.RemoteAddr().String())
		return refuse()
	}
	s.conns.Add(1)
	cs := &conn{c: c, lp: s.loopFor(c), raw: acc.raw, wrapped: acc.wrapped}
	c.SetContext(cs)
	s.open.add(cs)
	// Half-open on a member: gnet closes a connection on EOF, but a
	// session that may be owed answers then keeps writing them
	// (afterlife.go); a single node's is not, and a half-close seen
	// while its reading is paused comes through the loop's peer watch
	// (peerwatch.go).
	cs.halfOpen = s.hub.Pipelined()
	cs.sess = s.hub.Open(cs, acc.proto, session.Peer{Addr: c.RemoteAddr(), HalfOpen: cs.halfOpen})
	return nil, gnet.None
}

// OnClose runs disconnect cleanup (spec §D.4).
func (s *Server) OnClose(c gnet.Conn, err error) gnet.Action {
	cs, ok := c.Context().(*conn)
	if !ok || cs == nil {
		return gnet.None
	}
	c.SetContext(nil)
	if cs.halfOpen && endsInput(err) && c.OutboundBuffered() == 0 && s.afterlife(cs, c) {
		return gnet.None // closed once its answers are written
	}
	cs.closed = true
	cs.writeHeld() // drops it: nothing is written once closed
	s.watch.closed(cs)
	s.closed(cs)
	return gnet.None
}

// afterlife keeps writing to a connection whose peer's input ended while
// its session is owed answers (afterlife.go), and reports whether it
// does. In OnClose, before gnet closes the socket.
func (s *Server) afterlife(cs *conn, c gnet.Conn) bool {
	if cs.sess.Owed() == 0 {
		return false
	}
	a, ok := startAfterlife(c, s.cfg.WriteTimeout)
	if !ok {
		return false
	}
	// The peer watch, if the connection was paused, watches the socket,
	// which the duplicate keeps open: it forgets it while it can still
	// name it.
	s.watch.remove(cs)
	cs.after = a
	cs.writeHeld() // now into the afterlife
	if !cs.sess.PeerClosed() {
		// Owed nothing after all, or closing already: as without.
		cs.Close()
	}
	return true
}

// closed runs a connection's disconnect cleanup once nothing more is
// written to it. On its loop.
func (s *Server) closed(cs *conn) {
	cs.closed = true
	s.open.remove(cs)
	cs.lp.rt.stop(cs)
	cs.sess.Closed()
	cs.lp.scratch.Trim()
	s.conns.Add(-1)
	s.cfg.Limiter.Release(cs.RemoteAddr())
	if cs.wrapped {
		_ = cs.raw.Close() // what the wrapper's Close adds (its socket is closed)
	}
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

// OnTick runs on gnet's ticker goroutine: the heap handed back once the
// server is quiet. (The hub's housekeeping prunes idle keys.)
//
// gnet calls it first once every loop is registered: the listeners start
// accepting then, and the server is ready.
func (s *Server) OnTick() (time.Duration, gnet.Action) {
	if !s.ticked {
		s.ticked = true
		s.mu.Lock()
		e := s.mu.gnet
		s.mu.Unlock()
		s.startAccepting(e)
		if s.cfg.Ready != nil {
			close(s.cfg.Ready)
		}
	}
	s.quiet.Tick(s.traffic())
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
	s.stopAccepting()
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
	s.mu.requested = true
	s.mu.Unlock()
	if !boot {
		return nil // OnBoot stops gnet as soon as it starts
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.Stop(ctx)
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
