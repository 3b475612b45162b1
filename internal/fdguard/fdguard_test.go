package fdguard

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// exhaust leaves this process without a free descriptor: the limit falls
// to the highest one open, and the holes below it are filled. The fillers
// are closed and the limit restored by the returned function (also at the
// end of the test).
func exhaust(t *testing.T) (restore func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	n := highestFD() + 1
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: uint64(n), Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	var fillers []int
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		fillers = append(fillers, fd)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() {
			for _, fd := range fillers {
				_ = unix.Close(fd)
			}
			_ = unix.Setrlimit(unix.RLIMIT_NOFILE, &old)
		})
	}
	t.Cleanup(restore)
	return restore
}

// highestFD is the highest descriptor number open in this process.
func highestFD() int {
	hi := 0
	for fd := 0; fd < 65536; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			hi = fd
		}
	}
	return hi
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestOutOfDescriptors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{unix.EMFILE, true},
		{unix.ENFILE, true},
		{&net.OpError{Op: "accept", Err: &osSyscallError{unix.EMFILE}}, true},
		{unix.ECONNRESET, false},
		{net.ErrClosed, false},
		{errors.New("other"), false},
	} {
		if got := OutOfDescriptors(c.err); got != c.want {
			t.Errorf("OutOfDescriptors(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type osSyscallError struct{ err error }

func (e *osSyscallError) Error() string { return "accept4: " + e.err.Error() }
func (e *osSyscallError) Unwrap() error { return e.err }

// At the limit, Accept neither fails nor spins: it refuses what waits in
// the backlog (its clients see the connection end), logs rate limited,
// counts, and serves again once a descriptor is free.
func TestListenerAtTheDescriptorLimit(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuf
	g := New(slog.New(slog.NewTextHandler(&logs, nil)))
	defer g.Close()
	l := g.Listener(raw)
	defer l.Close()

	accepted := make(chan net.Conn, 16)
	acceptErr := make(chan error, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				acceptErr <- err
				return
			}
			accepted <- c
		}
	}()

	// The clients' sockets are made before the descriptors run out, so
	// only the server side lacks one.
	port := raw.Addr().(*net.TCPAddr).Port
	var waiting []int
	for range 3 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		tv := unix.NsecToTimeval((20 * time.Second).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, fd)
	}
	restore := exhaust(t)
	for _, fd := range waiting {
		// The kernel completes the connection; the server cannot accept it.
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
	}
	// Each is refused: its client reads the end of the connection rather
	// than hanging (a 20 s receive timeout would fail the read with EAGAIN).
	for i, fd := range waiting {
		n, err := unix.Read(fd, make([]byte, 1))
		if n != 0 || (err != nil && err != unix.ECONNRESET) {
			t.Fatalf("waiting client %d: read %d, %v; want the connection ended", i, n, err)
		}
	}
	for g.Refused() < uint64(len(waiting)) {
		time.Sleep(time.Millisecond)
	}
	if g.Exhausted() == 0 {
		t.Fatal("no exhausted accept counted")
	}
	select {
	case err := <-acceptErr:
		t.Fatalf("Accept returned %v at the descriptor limit", err)
	default:
	}

	// Descriptors free up: the next client is served.
	restore()
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case sc := <-accepted:
		sc.Close()
	case err := <-acceptErr:
		t.Fatalf("Accept: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no accept after descriptors were freed")
	}
	if !strings.Contains(logs.String(), "out of file descriptors") {
		t.Errorf("nothing logged:\n%s", logs.String())
	}
	t.Logf("exhausted=%d refused=%d\n%s", g.Exhausted(), g.Refused(), logs.String())
}
