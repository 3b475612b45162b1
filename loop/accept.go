package loop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/session"
)

// The server accepts connections itself and hands each to gnet's loops
// (gnet.Engine.Register), instead of letting gnet listen:
//   - gnet's acceptor treats any accept error but EAGAIN, EINTR and a reset
//     as fatal and stops the whole engine: a process out of file
//     descriptors (EMFILE) would drop every client and every lock, and exit
//     0. Accepting here goes through fdguard, which backs off, refuses what
//     waits in the backlog, and resumes when descriptors free up.
//   - a drain (spec §D.5) closes the listeners and nothing else: gnet has no
//     way to stop one of its listeners while its loops serve on, and
//     reaching into its acceptor raced with its own shutdown.
// The cost is a dup(2) and a hop through gnet's worker pool per connection,
// not per request.

// listeners are the server's bound sockets: the line protocol's, then the
// godistlock one if configured.
type listeners struct {
	mu     sync.Mutex
	ls     []*fdguard.Listener
	protos []session.Protocol
	closed bool // stopAccepting ran: an accept error is the end, not a fault
	wg     sync.WaitGroup
	// register serialises gnet.Engine.Register: its round-robin balancer
	// is not safe for concurrent use, and each listener has a goroutine.
	register sync.Mutex
}

// bind opens the listeners given in the Config, or binds its addresses.
func (s *Server) bind() error {
	ls := s.cfg.Listeners
	if len(ls) == 0 {
		addrs := []string{s.cfg.Addr}
		if s.cfg.GodistlockAddr != "" {
			addrs = append(addrs, s.cfg.GodistlockAddr)
		}
		lc := net.ListenConfig{KeepAlive: 30 * time.Second}
		for _, a := range addrs {
			network, address, ok := strings.Cut(a, "://")
			if !ok {
				network, address = "tcp", a
			}
			l, err := lc.Listen(context.Background(), network, address)
			if err != nil {
				for _, l := range ls {
					_ = l.Close()
				}
				return fmt.Errorf("loop: listen %s: %w", a, err)
			}
			ls = append(ls, l)
		}
	}
	guard := s.cfg.Guard
	if guard == nil {
		guard = fdguard.New(nil)
		s.ownGuard = guard
	}
	s.ln.ls = make([]*fdguard.Listener, len(ls))
	s.ln.protos = make([]session.Protocol, len(ls))
	for i, l := range ls {
		s.ln.ls[i] = guard.Listener(l)
		s.ln.protos[i] = session.Dflockd
		if i == 1 {
			s.ln.protos[i] = session.Godistlock
		}
	}
	return nil
}

// startAccepting runs one accept goroutine per listener; gnet's loops must
// be running (Register fails before).
func (s *Server) startAccepting(e gnet.Engine) {
	s.ln.mu.Lock()
	defer s.ln.mu.Unlock()
	if s.ln.closed {
		return
	}
	for i, l := range s.ln.ls {
		s.ln.wg.Add(1)
		go func() {
			defer s.ln.wg.Done()
			if err := s.acceptLoop(e, l, s.ln.protos[i]); err != nil {
				s.fail(err)
			}
		}()
	}
}

// acceptLoop hands l's connections to gnet until l is closed. fdguard
// absorbs descriptor shortages; any other error ends serving.
func (s *Server) acceptLoop(e gnet.Engine, l *fdguard.Listener, proto session.Protocol) error {
	for {
		c, err := l.Accept()
		if err != nil {
			s.ln.mu.Lock()
			closed := s.ln.closed
			s.ln.mu.Unlock()
			// Closed by stopAccepting, or by the listener's owner: a
			// cluster member's relay closes the client listener it
			// shares with the loops as the member drains, alongside
			// the loops' own Shutdown. Either is the end, not a fault.
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("loop: accept on %s: %w", l.Addr(), err)
		}
		// gnet serves a duplicate of the socket (and closes c): a
		// wrapper a listener returns (cmd/dflockd's forwarder admits
		// with one) is unwrapped for it, and closed when the
		// connection ends, which runs what its Close adds.
		inner := c
		if w, ok := c.(interface{ NetConn() net.Conn }); ok {
			inner = w.NetConn()
		}
		ctx := gnet.NewNetConnContext(context.Background(), inner)
		ctx = gnet.NewContext(ctx, accepted{proto: proto, raw: c, wrapped: inner != c})
		s.ln.register.Lock()
		res, err := e.Register(ctx)
		s.ln.register.Unlock()
		if err != nil {
			_ = c.Close() // the engine is stopping
			continue
		}
		go func() {
			// Register dups the socket: that can still fail for want of a
			// descriptor, and then the connection is closed (a refusal).
			r := <-res
			if r.Err != nil && inner != c {
				_ = c.Close() // gnet closed the socket; the wrapper's part is ours
			}
			switch {
			case r.Err == nil:
				l.Served()
			case fdguard.OutOfDescriptors(r.Err):
				l.Failed(r.Err)
			default:
				s.cfg.Logf("loop: connection from %s not served: %v", c.RemoteAddr(), r.Err)
			}
		}()
	}
}

// stopAccepting closes the listeners (spec §D.5): the kernel refuses new
// connections from then on. The loops go on serving the open ones.
func (s *Server) stopAccepting() {
	s.ln.mu.Lock()
	s.ln.closed = true
	ls := s.ln.ls
	s.ln.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
}

// fail ends serving after a fault (an accept error that is not a
// shortage): Serve returns err.
func (s *Server) fail(err error) {
	s.mu.Lock()
	if s.mu.fault == nil {
		s.mu.fault = err
	}
	e, boot := s.mu.gnet, s.mu.boot
	s.mu.Unlock()
	s.stopAccepting()
	if boot {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = e.Stop(ctx)
		}()
	}
}

// gnet's engine refuses Register and Stop without a listener of its own,
// so it gets one nobody can reach: a Unix socket whose file is removed as
// soon as gnet has bound it (OnBoot), in a private directory. Where no
// directory can be made, an abstract socket with a random name.
func hiddenListener() (addr string, cleanup func()) {
	dir, err := os.MkdirTemp("", "dflockd-gnet-")
	if err != nil {
		var b [16]byte
		_, _ = rand.Read(b[:])
		return "unix://@dflockd-ng-" + hex.EncodeToString(b[:]), func() {}
	}
	path := filepath.Join(dir, "s")
	return "unix://" + path, func() { _ = os.RemoveAll(dir) }
}

// errLoopsStopped is Serve's error when gnet's loops end although nobody
// asked (an error inside gnet): the process must not exit as if drained.
var errLoopsStopped = errors.New("loop: the event loops stopped without a shutdown")
