package loop

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// A cluster member's session owes a connection the answers of requests
// that are still on their way through the log, and a client may
// half-close its side once it has sent them (`nc -N`): it must still get
// them. gnet closes a connection as soon as it reads the peer's EOF. The
// loops used to stop reading a connection whenever answers were owed, so
// that the EOF stayed unread until they were written; that cost four
// epoll_ctl calls per request at depth 1 (pause, peer watch, unwatch,
// resume), 15–20 % of a loaded leader's CPU. Instead, a connection owed
// answers is read on, and the EOF, when it comes, starts an afterlife:
// in OnClose, before gnet closes its descriptor, the socket is
// duplicated, and the connection writes what it is still owed to the
// duplicate until its session closes it (the session closes behind its
// requests, session.PeerClosed, and closes the transport once they are
// answered).
//
// Reading on loses nothing the pause kept. Requests read behind the owed
// ones and not yet parsed when the EOF comes are dropped, as they were
// when the peer watch reported the half-close of a paused connection (the
// session closes behind what it has submitted). Output still in gnet's
// buffer would be dropped by gnet's close, so a session whose output
// waits there stops reading as before (Session.HoldInput), and the EOF
// stays unread until it resumes.
//
// Afterlives are rare, so one is simple rather than fast: a goroutine of
// its own writes to the duplicate, a pollable os.File, with a deadline on
// every write, so that a peer that never reads cannot keep it.

// afterlifeWriteBound bounds one write of an afterlife when the server
// has no write timeout of its own.
const afterlifeWriteBound = 30 * time.Second

// afterlife writes a half-closed connection's last answers. write, unsent
// and close are called on the connection's loop; run is the goroutine.
type afterlife struct {
	f       *os.File
	remote  net.Addr
	timeout time.Duration
	kick    chan struct{} // capacity 1: something to write, or close
	done    chan struct{} // closed when run returns
	mu      struct {
		sync.Mutex
		buf     []byte // queued, not yet handed to the socket
		pending int    // bytes queued or being written
		closing bool
		failed  bool // a write failed: the rest is dropped
	}
}

// startAfterlife duplicates the connection's socket and starts writing to
// the duplicate; false if it cannot (the connection then closes as it
// would have). On the loop, inside OnClose.
func startAfterlife(c gnet.Conn, timeout time.Duration) (*afterlife, bool) {
	fd, err := unix.FcntlInt(uintptr(c.Fd()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	// The socket is non-blocking (gnet's), so the file is pollable and its
	// writes honour deadlines.
	f := os.NewFile(uintptr(fd), "afterlife")
	if timeout <= 0 {
		timeout = afterlifeWriteBound
	}
	a := &afterlife{f: f, remote: c.RemoteAddr(), timeout: timeout,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	go a.run()
	return a, true
}

// endsInput reports whether err, with which gnet closes a connection, is
// the peer's end of input: a half-close (or a close) after which writing
// may still reach it. A reset or a failed socket is not.
func endsInput(err error) bool { return errors.Is(err, io.EOF) }

func (a *afterlife) write(b []byte) {
	a.mu.Lock()
	if !a.mu.failed && !a.mu.closing {
		a.mu.buf = append(a.mu.buf, b...)
		a.mu.pending += len(b)
	}
	a.mu.Unlock()
	a.signal()
}

// unsent is what the socket has not taken yet.
func (a *afterlife) unsent() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.pending
}

// close closes the duplicate once what is queued is written.
func (a *afterlife) close() {
	a.mu.Lock()
	a.mu.closing = true
	a.mu.Unlock()
	a.signal()
}

// abort closes the duplicate now, whatever is queued (the server stops).
func (a *afterlife) abort() {
	a.close()
	_ = a.f.Close() // ends a blocked write; run closes it again, harmlessly
	<-a.done
}

func (a *afterlife) signal() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

func (a *afterlife) run() {
	defer close(a.done)
	defer a.f.Close()
	var spare []byte
	for range a.kick {
		for {
			a.mu.Lock()
			b := a.mu.buf
			a.mu.buf = spare[:0]
			closing := a.mu.closing
			a.mu.Unlock()
			if len(b) == 0 {
				if closing {
					return
				}
				break
			}
			_ = a.f.SetWriteDeadline(time.Now().Add(a.timeout))
			_, err := a.f.Write(b)
			a.mu.Lock()
			a.mu.pending -= len(b)
			if err != nil {
				a.mu.failed = true
				a.mu.buf, a.mu.pending = nil, 0
			}
			a.mu.Unlock()
			if err != nil {
				return
			}
			spare = b
		}
	}
}
