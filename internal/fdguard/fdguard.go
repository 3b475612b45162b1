// Package fdguard keeps a server's listeners up when the process runs out
// of file descriptors.
//
// accept(2) fails with EMFILE (or ENFILE, for the whole system) when no
// descriptor is free. The pending connection stays in the kernel's backlog
// and the listener stays readable, so a loop that retries at once spins,
// and one that treats the error as fatal (as gnet's acceptor does) takes
// every client down with it. A guarded listener instead:
//   - keeps serving: Accept does not return the error, it waits and retries,
//     the wait doubling from 5 ms to a cap of 1 s (net/http's accept loop);
//   - refuses rather than strands: one descriptor is held in reserve, and
//     while descriptors are out it is given up for an instant to accept and
//     close the connections waiting in the backlog, so their clients see the
//     connection end (as over --max-connections) instead of hanging;
//   - says so once a second at most, with counts, and counts it for
//     /metrics (Exhausted, Refused);
//   - serves new connections again as soon as descriptors free up.
//
// One Guard serves every listener of the process, as the limit is the
// process's.
package fdguard

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Backoff bounds of a listener out of descriptors.
const (
	backoffMin = 5 * time.Millisecond
	backoffMax = time.Second
	// refuseBatch bounds the connections refused per wait, so a flood
	// cannot hold the listener in the refusing state.
	refuseBatch = 128
)

// Guard watches the listeners of one process. The zero value is not
// usable; make one with New.
type Guard struct {
	log *slog.Logger // nil: no lines
	now func() time.Time

	exhausted atomic.Uint64 // accepts that failed for lack of descriptors
	refused   atomic.Uint64 // connections closed at once on the spare descriptor

	mu    sync.Mutex
	spare int // the reserved descriptor (/dev/null), -1 when not held
	// Rate-limited reporting: the first failure of a spell is logged at
	// once, later ones once a second with what happened since (report).
	unlogged   uint64 // failures since the last line
	unrefused  uint64 // refusals since the last line
	lastErr    string // the last failure, for the next line
	lastAddr   string
	inSpell    bool // report runs: a failure less than a second ago
	spellStart time.Time
}

// New returns a guard that logs to log (nil: silent) and holds its spare
// descriptor.
func New(log *slog.Logger) *Guard {
	g := &Guard{log: log, now: time.Now, spare: -1}
	g.reserve()
	return g
}

// Exhausted counts accepts that failed because descriptors ran out.
func (g *Guard) Exhausted() uint64 { return g.exhausted.Load() }

// Refused counts connections accepted on the spare descriptor and closed
// at once because descriptors ran out.
func (g *Guard) Refused() uint64 { return g.refused.Load() }

// Listener returns l guarded: its Accept never returns a descriptor
// shortage, only a connection or a lasting error (net.ErrClosed once l or
// the returned listener is closed). A listener that is guarded already is
// returned as it is.
func (g *Guard) Listener(l net.Listener) *Listener {
	if gl, ok := l.(*Listener); ok {
		return gl
	}
	return &Listener{Listener: l, g: g, closed: make(chan struct{})}
}

// reserve opens the spare descriptor if it is not held. g.mu held, or
// from New.
func (g *Guard) reserve() {
	if g.spare >= 0 {
		return
	}
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		g.spare = fd
	}
}

// Close gives the spare descriptor back.
func (g *Guard) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.spare >= 0 {
		_ = unix.Close(g.spare)
		g.spare = -1
	}
}

// OutOfDescriptors reports whether err is a descriptor (or kernel memory)
// shortage: the errors that go away once connections close.
func OutOfDescriptors(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM:
		return true
	}
	return false
}

// shortage handles one failed accept on l: it is counted and the
// connections waiting in l's backlog are refused on the spare descriptor.
// The first shortage of a spell is logged at once, and starts report.
func (g *Guard) shortage(l net.Listener, err error) {
	g.exhausted.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	refused := g.refuseWaiting(l)
	g.refused.Add(refused)
	g.unlogged++
	g.unrefused += refused
	g.lastErr, g.lastAddr = err.Error(), l.Addr().String()
	if g.inSpell {
		return // report has it
	}
	g.inSpell, g.spellStart = true, g.now()
	g.warn()
	go g.report()
}

// report writes a line a second while the spell lasts: the shortages
// since the last line, or, after a second with none, that the spell is
// over.
func (g *Guard) report() {
	for {
		time.Sleep(time.Second)
		g.mu.Lock()
		if g.unlogged > 0 {
			g.warn()
			g.mu.Unlock()
			continue
		}
		g.inSpell = false
		if g.log != nil {
			g.log.Info("accepting connections again: no accept has failed for want of descriptors for a second",
				"out_for", g.now().Sub(g.spellStart).Round(time.Millisecond).String())
		}
		g.mu.Unlock()
		return
	}
}

// warn logs the shortages since the last line. g.mu held.
func (g *Guard) warn() {
	if g.log != nil {
		g.log.Warn("out of file descriptors: open connections are served, new ones refused until some close",
			"addr", g.lastAddr, "error", g.lastErr,
			"failed_accepts", g.unlogged, "refused", g.unrefused, "fd_limit", softLimit(),
			"fix", "raise LimitNOFILE / ulimit -n, or lower --max-connections")
	}
	g.unlogged, g.unrefused = 0, 0
}

// recovered notes that a connection was accepted after shortages: the
// spare descriptor is taken back if it could not be.
func (g *Guard) recovered() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reserve()
}

// refuseWaiting gives up the spare descriptor, accepts and closes up to
// refuseBatch connections from l's backlog without waiting for more, and
// takes the spare back. g.mu held.
func (g *Guard) refuseWaiting(l net.Listener) uint64 {
	sc, ok := l.(syscall.Conn)
	if !ok || g.spare < 0 {
		g.reserve()
		return 0
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	_ = unix.Close(g.spare)
	g.spare = -1
	var n uint64
	// Control, not Read: a listener's RawConn supports only Control. The
	// socket is non-blocking (Go's), so accept4 says EAGAIN when the
	// backlog is empty.
	_ = rc.Control(func(fd uintptr) {
		for n < refuseBatch {
			nfd, _, err := unix.Accept4(int(fd), unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK)
			if err != nil {
				break // EAGAIN: the backlog is empty; or still no descriptor
			}
			_ = unix.Close(nfd)
			n++
		}
	})
	g.reserve()
	return n
}

// softLimit is the process's descriptor limit, for the log line.
func softLimit() uint64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return rl.Cur
}

// Listener is a guarded net.Listener.
type Listener struct {
	net.Listener
	g      *Guard
	once   sync.Once
	closed chan struct{}

	mu      sync.Mutex
	delay   time.Duration // the current wait: 0 while descriptors are there
	pending bool          // Failed since the last Accept: wait before the next
	suspect bool          // Failed since the last Served: an accept alone proves nothing
}

// Accept waits for a connection. While descriptors are out it waits,
// doubling the wait up to a second, and refuses what is in the backlog.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		pending := l.pending
		l.pending = false
		l.mu.Unlock()
		if pending && !l.wait() {
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err == nil {
			l.mu.Lock()
			over := l.delay > 0 && !l.suspect
			if over {
				l.delay = 0
			}
			l.mu.Unlock()
			if over {
				l.g.recovered()
			}
			return c, nil
		}
		if !OutOfDescriptors(err) {
			return nil, err
		}
		l.g.shortage(l.Listener, err)
		if !l.wait() {
			return nil, net.ErrClosed
		}
	}
}

// Failed reports that a connection l accepted could not be served for
// want of a descriptor (serving it needed another one: gnet dups the
// socket). It counts as a failed accept, and the next Accept waits first.
func (l *Listener) Failed(err error) {
	l.g.shortage(l.Listener, err)
	l.mu.Lock()
	l.pending, l.suspect = true, true
	l.mu.Unlock()
}

// Served reports that a connection l accepted is being served: after
// Failed, descriptors are there again.
func (l *Listener) Served() {
	l.mu.Lock()
	over := l.suspect
	l.suspect, l.delay = false, 0
	l.mu.Unlock()
	if over {
		l.g.recovered()
	}
}

// wait sleeps the next, doubled, wait; false if l closed meanwhile.
func (l *Listener) wait() bool {
	l.mu.Lock()
	l.delay = min(max(2*l.delay, backoffMin), backoffMax)
	d := l.delay
	l.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.closed:
		return false
	}
}

func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// File descriptors a process needs besides its clients' connections:
// standard streams, the event loops' pollers, the raft directory, the
// fence file, the HTTP listener, the spare and headroom.
const baseDescriptors = 64

// CheckLimit compares the process's descriptor limit with what the
// connection caps allow: maxConns client connections, each needing perConn
// descriptors (0 = no cap). It returns a warning line's attributes when the
// limit is below what the caps let clients open, or nil. (Go raises the
// soft limit to the hard one at startup, so the soft limit is what there
// is to get.)
func CheckLimit(maxConns, perConn int) (limit uint64, need uint64, short bool) {
	limit = softLimit()
	if maxConns <= 0 {
		return limit, 0, false
	}
	need = uint64(maxConns)*uint64(max(perConn, 1)) + baseDescriptors
	return limit, need, limit != 0 && limit != unix.RLIM_INFINITY && limit < need
}
