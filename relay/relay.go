// Package relay is --cluster-forward (issue #12): a cluster member that
// relays the client connections it accepts to the leader, so that clients
// which do not follow error_not_leader (dflockd's Python and TypeScript
// clients, nc, a TCP load balancer in front of the members) work through
// any member.
//
// The relay is per connection and byte for byte: the leader does auth,
// limits, drain and every reply, as for a client of its own, and TLS is
// relayed too (the client's TLS session is with the leader, so the
// follower needs no certificate authority of the leader's). Who serves a
// connection is decided when it is accepted (route):
//   - this member leads: its own server (Listener, SetServer: the gnet
//     loops, or netconn with TLS), as without the flag;
//   - another member leads: a relay to that member's client address;
//   - no leader is known, or this member was elected and is not ready
//     yet: the connection waits (unread) up to forwardWait for that to
//     change, then is served here as without the flag, answering
//     error_not_leader; such a "stray" is hung up once a leader other
//     than this member is known, so that its client comes back through
//     the leader.
//
// Afterwards (supervise, on raft's leader observations and every
// forwardPoll): a relay whose leader is no longer the one this member
// knows is closed, as is a relay whose leader closes its end (it died, or
// it was deposed and hung up): the client reconnects, through its load
// balancer, to any member. A leader that is deposed hangs up on its own
// clients once their waiting requests are answered error_not_leader
// (Deposed, called by cmd/dflockd's cluster output; Server.Hangup).
//
// Resources: every accepted connection is admitted here, once, under
// --max-connections and --max-connections-per-ip, for as long as it is
// relayed, waits or is served (the member's server then has no limiter
// of its own):
// relayed connections count on the member that relays them. A relay is
// two goroutines with a relayBuf buffer each; both end when either side
// closes, and Shutdown waits for relays up to --shutdown-timeout, then
// closes them.
//
// Lock order: the server's locks, then Relay.mu (netconn closes the
// admitted connections and the local listener under its lock); nothing
// calls into the server while holding Relay.mu.
package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
)

const (
	// forwardWait bounds how long a connection accepted while no leader
	// is known waits for one: a failover takes 1–3 s with the default
	// 1 s raft timeouts, more on a loaded machine.
	forwardWait = 5 * time.Second
	// forwardDialTimeout bounds one connection attempt to the leader; a
	// leader that just died is noticed by the election sooner.
	forwardDialTimeout = 2 * time.Second
	// forwardRetry is the pause after a failed dial before the next try
	// (sooner if the leader changes).
	forwardRetry = 250 * time.Millisecond
	// forwardPoll: leadership is read this often besides raft's
	// observations, since a promotion becoming ready is not one.
	forwardPoll = 100 * time.Millisecond
	// relayBuf is the buffer of each direction of a relay: requests and
	// replies are lines of at most a few hundred bytes (a stats document
	// or a list range, more), and an idle relay keeps both.
	relayBuf = 4 << 10
)

// Leader is what a member knows of the leadership.
type Leader struct {
	ID      string // the leader's node id; "" when unknown
	Addr    string // its client address
	Leading bool   // this member leads and its promotion is done
}

// Config configures a Relay.
type Config struct {
	Self     string           // this member's node id
	State    func() Leader    // any goroutine, quick
	Listener net.Listener     // the client listener
	Limiter  *conncap.Limiter // --max-connections, --max-connections-per-ip; nil admits all
	Draining func() bool      // the hub drains: accepted connections are closed at once
	// WriteTimeout bounds a write to a relayed client that takes nothing
	// (--write-timeout; 0: no bound), as the server bounds its replies.
	WriteTimeout time.Duration
	Log          *slog.Logger
	Events       *ratelog.Logger // refused connections
	// Watch, if set, calls kick on every leadership change until the
	// stop function it returns is called.
	Watch func(kick func()) (stop func())
	// Wait bounds the wait for a leader (default forwardWait).
	Wait time.Duration
}

// Server serves this member's own clients (loop.Server, netconn.Server):
// a deposed leader's are hung up once their waiting requests are
// answered, and a stray once a leader is known.
type Server interface {
	// Hangup closes the connections match approves once what was
	// posted to them is written.
	Hangup(match func(net.Conn) bool) int
}

// SetServer names the server of the connections Listener hands out; any
// goroutine, before or after serving starts.
func (f *Relay) SetServer(s Server) { f.srv.Store(&s) }

// Relay accepts the client connections of a member with
// --cluster-forward and relays or serves each.
type Relay struct {
	cfg Config
	srv atomic.Pointer[Server] // for Hangup; set once made

	local  chan net.Conn // to this member's server, through localListener
	kick   chan struct{}
	quit   chan struct{} // closed by stop
	ctx    context.Context
	cancel context.CancelFunc
	// failed is closed, with failErr set, when accepting fails for good.
	failed  chan struct{}
	failErr error

	startOnce, stopOnce sync.Once
	wg                  sync.WaitGroup // the accept loop, the supervisor, every accepted connection's route

	mu struct {
		sync.Mutex
		closed  bool
		unwatch func()
		last    Leader
		changed chan struct{} // closed and replaced when last changes
		relays  map[*relayed]struct{}
		// selfAddr is a leader client address found to lead back to this
		// member (a misconfiguration): not dialled again until the
		// leadership changes, so that no relay goes round.
		selfAddr string
		strays   map[*admitted]struct{}
		allGone  chan struct{} // closed when the last relay ends after closed
	}
}

func New(cfg Config) *Relay {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Draining == nil {
		cfg.Draining = func() bool { return false }
	}
	if cfg.Wait <= 0 {
		cfg.Wait = forwardWait
	}
	f := &Relay{cfg: cfg, local: make(chan net.Conn), kick: make(chan struct{}, 1),
		quit: make(chan struct{}), failed: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	f.mu.changed = make(chan struct{})
	f.mu.relays = make(map[*relayed]struct{})
	f.mu.strays = make(map[*admitted]struct{})
	return f
}

// Listener is what this member's server serves: the connections the
// Relay keeps for this member. Its first Accept starts the Relay;
// its Close stops it accepting.
func (f *Relay) Listener() net.Listener { return localListener{f} }

type localListener struct{ f *Relay }

func (l localListener) Accept() (net.Conn, error) {
	f := l.f
	f.startOnce.Do(f.start)
	select {
	case c := <-f.local:
		return c, nil
	case <-f.failed:
		return nil, f.failErr
	case <-f.quit:
		return nil, net.ErrClosed
	}
}

// Close is called by the server (netconn: under its lock): it does not wait.
func (l localListener) Close() error { l.f.stop(); return nil }

func (l localListener) Addr() net.Addr { return l.f.cfg.Listener.Addr() }

func (f *Relay) start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.closed {
		return
	}
	if f.cfg.Watch != nil {
		f.mu.unwatch = f.cfg.Watch(f.poke)
	}
	f.wg.Add(2)
	go f.acceptLoop()
	go f.supervise()
}

// poke has the supervisor look at the leadership now; any goroutine.
func (f *Relay) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// stop closes the listener and ends every wait; it does not wait itself.
func (f *Relay) stop() {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		f.mu.closed = true
		f.mu.Unlock()
		close(f.quit)
		f.cancel()
		_ = f.cfg.Listener.Close()
	})
}

// shutdown stops accepting, waits until ctx is done for the relays to
// end (a relayed client leaves, or the leader closes it), closes those
// left, and returns once every goroutine of the Relay has ended.
func (f *Relay) Shutdown(ctx context.Context) {
	f.stop()
	f.mu.Lock()
	var gone chan struct{}
	if len(f.mu.relays) > 0 {
		gone = make(chan struct{})
		f.mu.allGone = gone
	}
	f.mu.Unlock()
	if gone != nil {
		select {
		case <-gone:
		case <-ctx.Done():
			f.mu.Lock()
			left := make([]*relayed, 0, len(f.mu.relays))
			for r := range f.mu.relays {
				left = append(left, r)
			}
			f.mu.Unlock()
			f.cfg.Log.Info("shutdown: closing relayed connections", "connections", len(left))
			for _, r := range left {
				r.close()
			}
		}
	}
	f.wg.Wait()
	f.mu.Lock()
	unwatch := f.mu.unwatch
	f.mu.unwatch = nil
	f.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
}

// acceptLoop accepts until the listener closes. Temporary errors (out of
// descriptors) back off as netconn's accept loop does (spec §D.1).
func (f *Relay) acceptLoop() {
	defer f.wg.Done()
	var backoff time.Duration
	for {
		raw, err := f.cfg.Listener.Accept()
		if err != nil {
			select {
			case <-f.quit:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var te interface{ Temporary() bool }
			if !errors.As(err, &te) || !te.Temporary() {
				f.failErr = err
				close(f.failed)
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			f.cfg.Log.Info("accept failed; retrying", "error", err.Error(), "backoff", backoff.String())
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-f.quit:
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		f.admit(raw)
	}
}

// admitted is an accepted connection holding its place under the
// connection caps until it is closed, whoever closes it.
type admitted struct {
	net.Conn
	f    *Relay
	once sync.Once
}

// NetConn is the admitted socket, which the gnet loops serve a duplicate
// of; they Close a when the connection ends.
func (a *admitted) NetConn() net.Conn { return a.Conn }

func (a *admitted) Close() error {
	err := a.Conn.Close()
	a.once.Do(func() {
		if a.f.cfg.Limiter != nil {
			a.f.cfg.Limiter.Release(a.Conn.RemoteAddr())
		}
		a.f.mu.Lock()
		delete(a.f.mu.strays, a)
		a.f.mu.Unlock()
	})
	return err
}

// admit takes a connection in under the caps (a refused one is closed
// without a reply, spec §D.1) and routes it on a goroutine of its own.
func (f *Relay) admit(raw net.Conn) {
	if f.cfg.Draining() {
		_ = raw.Close()
		return
	}
	if f.cfg.Limiter != nil && !f.cfg.Limiter.Admit(raw.RemoteAddr()) {
		f.cfg.Events.Warn("connection refused: --max-connections or --max-connections-per-ip reached",
			"remote", raw.RemoteAddr().String())
		_ = raw.Close()
		return
	}
	a := &admitted{Conn: raw, f: f}
	f.mu.Lock()
	if f.mu.closed {
		f.mu.Unlock()
		_ = a.Close()
		return
	}
	f.wg.Add(1)
	f.mu.Unlock()
	go f.route(a)
}

// route decides who serves a: this member, or the leader through a
// relay, waiting up to forwardWait (cfg.Wait) for a leader to be known. A relayed
// connection's route goroutine runs its relay.
func (f *Relay) route(a *admitted) {
	defer f.wg.Done()
	deadline := time.Now().Add(f.cfg.Wait)
	for {
		f.mu.Lock()
		changed, self := f.mu.changed, f.mu.selfAddr
		f.mu.Unlock()
		st := f.cfg.State()
		var retry *time.Timer
		switch {
		case st.Leading:
			f.serveLocal(a, false)
			return
		case st.ID != "" && st.ID != f.cfg.Self && st.Addr != "" && st.Addr != self:
			up, err := f.dial(st.Addr, deadline)
			if err == nil && dialedSelf(up, f.cfg.Listener.Addr()) {
				_ = up.Close()
				f.mu.Lock()
				f.mu.selfAddr = st.Addr
				f.mu.Unlock()
				f.cfg.Events.Warn("--cluster-forward: the leader's client address leads to this member; "+
					"not relaying to it (check --cluster-peers and --advertise-addr)", "leader", st.ID, "addr", st.Addr)
				break // wait for another leader
			}
			if err == nil {
				f.relay(a, up, st.ID)
				return
			}
			f.cfg.Log.Debug("--cluster-forward: cannot reach the leader", "leader", st.ID, "addr", st.Addr,
				"error", err.Error())
			retry = time.NewTimer(forwardRetry)
		}
		if !f.await(changed, retry, deadline) {
			_ = a.Close() // stopping
			return
		}
		if time.Now().After(deadline) {
			// No leader to relay to: served here, as without the flag.
			f.serveLocal(a, true)
			return
		}
	}
}

// await waits for a leadership change, retry (if not nil) or the
// deadline; false if the Relay stops meanwhile.
func (f *Relay) await(changed <-chan struct{}, retry *time.Timer, deadline time.Time) bool {
	var retryC <-chan time.Time
	if retry != nil {
		defer retry.Stop()
		retryC = retry.C
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case <-changed:
	case <-retryC:
	case <-wait.C:
	case <-f.quit:
		return false
	}
	return true
}

// dial connects to the leader's client address by the deadline (at most
// forwardDialTimeout).
func (f *Relay) dial(addr string, deadline time.Time) (net.Conn, error) {
	d := net.Dialer{Timeout: min(forwardDialTimeout, max(time.Until(deadline), 100*time.Millisecond))}
	return d.DialContext(f.ctx, "tcp", addr)
}

// dialedSelf reports whether up reached this member's own listener at
// ln: the same port, on the listener's address, or on the address the
// connection left from when the listener takes every address.
func dialedSelf(up net.Conn, ln net.Addr) bool {
	r, ok1 := up.RemoteAddr().(*net.TCPAddr)
	l, ok2 := ln.(*net.TCPAddr)
	loc, ok3 := up.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 || !ok3 || r.Port != l.Port {
		return false
	}
	return r.IP.Equal(l.IP) || l.IP.IsUnspecified() && r.IP.Equal(loc.IP)
}

// serveLocal hands a to this member's server; a stray (served for want
// of a leader) is hung up once a leader other than this member is known.
func (f *Relay) serveLocal(a *admitted, stray bool) {
	if stray {
		f.mu.Lock()
		f.mu.strays[a] = struct{}{}
		f.mu.Unlock()
	}
	select {
	case f.local <- a:
	case <-f.quit:
		_ = a.Close()
	}
}

// relayed is a client connection relayed to the leader.
type relayed struct {
	client *admitted
	up     net.Conn
	leader string // node id of the leader it goes to
	once   sync.Once
}

// close closes both ends; any goroutine, any number of times.
func (r *relayed) close() {
	r.once.Do(func() {
		_ = r.client.Close()
		_ = r.up.Close()
	})
}

// relay copies a to up and up to a until the leader's end closes (or
// either fails, or the relay is closed), then closes both.
func (f *Relay) relay(a *admitted, up net.Conn, leader string) {
	r := &relayed{client: a, up: up, leader: leader}
	f.mu.Lock()
	if f.mu.closed {
		f.mu.Unlock()
		r.close()
		return
	}
	f.mu.relays[r] = struct{}{}
	f.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := pump(up, a, 0); err != nil {
			r.close()
			return
		}
		// The client half-closed: the leader is told so, and its
		// replies still come back (spec: a half-close cancels a waiting
		// request under v2 and rf, not under v1).
		if cw, ok := up.(interface{ CloseWrite() error }); !ok || cw.CloseWrite() != nil {
			r.close()
		}
	}()
	_ = pump(a, up, f.cfg.WriteTimeout)
	r.close()
	<-done

	f.mu.Lock()
	delete(f.mu.relays, r)
	if len(f.mu.relays) == 0 && f.mu.allGone != nil {
		close(f.mu.allGone)
		f.mu.allGone = nil
	}
	f.mu.Unlock()
}

// pump copies src to dst until src ends: nil at its EOF, else the error
// of either side. With wt > 0, a write to dst that does not complete
// within wt fails.
func pump(dst, src net.Conn, wt time.Duration) error {
	buf := make([]byte, relayBuf)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if wt > 0 {
				_ = dst.SetWriteDeadline(time.Now().Add(wt))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// supervise follows the leadership until stop.
func (f *Relay) supervise() {
	defer f.wg.Done()
	t := time.NewTicker(forwardPoll)
	defer t.Stop()
	for {
		select {
		case <-f.quit:
			return
		case <-t.C:
		case <-f.kick:
		}
		f.check()
	}
}

// check wakes the routes waiting for a leader when the leadership
// changed, closes the relays to a member that no longer leads, and hangs
// up on the strays once another member leads. Strays stay listed until
// they close: one that the server had not registered yet is hung
// up at the next check.
func (f *Relay) check() {
	st := f.cfg.State()
	var stale []*relayed
	var strays map[net.Conn]bool
	f.mu.Lock()
	if st != f.mu.last {
		f.mu.last = st
		f.mu.selfAddr = ""
		close(f.mu.changed)
		f.mu.changed = make(chan struct{})
	}
	if st.ID != "" {
		for r := range f.mu.relays {
			if r.leader != st.ID {
				stale = append(stale, r)
			}
		}
	}
	switch {
	case st.Leading:
		// Served by the leader now, they are its clients like any other
		// (a deposition hangs up on them all).
		clear(f.mu.strays)
	case st.ID != "" && st.ID != f.cfg.Self && len(f.mu.strays) > 0:
		strays = make(map[net.Conn]bool, len(f.mu.strays))
		for a := range f.mu.strays {
			strays[a] = true
		}
	}
	f.mu.Unlock()
	for _, r := range stale {
		f.cfg.Log.Debug("--cluster-forward: closing a relay to a former leader", "leader", r.leader, "new_leader", st.ID)
		r.close()
	}
	if srv := f.srv.Load(); srv != nil && strays != nil {
		(*srv).Hangup(func(c net.Conn) bool { return strays[c] })
	}
}

// deposed hangs up on every client of this member, which no longer
// leads, once their waiting requests are answered error_not_leader:
// clients that do not follow redirects reconnect, to a member that
// relays them to the new leader.
func (f *Relay) Deposed() {
	if srv := f.srv.Load(); srv != nil {
		if n := (*srv).Hangup(nil); n > 0 {
			f.cfg.Log.Info("no longer the leader: closing client connections after their replies (--cluster-forward)",
				"connections", n)
		}
	}
	f.poke()
}
