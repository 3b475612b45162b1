//go:build linux

package gnetwrite

import (
	"bytes"
	"testing"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// queueConn is a gnet connection on one end of a socket pair whose Write
// only queues, as gnet's does once the socket is full: what send leaves
// to gnet shows in queued, what it wrote itself arrives at the far end.
type queueConn struct {
	gnet.Conn // methods the test does not expect panic
	fd        int
	queued    []byte
	calls     int
}

func (q *queueConn) Fd() int               { return q.fd }
func (q *queueConn) OutboundBuffered() int { return len(q.queued) }
func (q *queueConn) Write(b []byte) (int, error) {
	q.calls++
	q.queued = append(q.queued, b...)
	return len(b), nil
}

// socketPair returns a connection on a non-blocking socket with a small
// send buffer, and the far end's descriptor.
func socketPair(t *testing.T) (*queueConn, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	return &queueConn{fd: fds[0]}, fds[1]
}

// drain reads whatever the far end has received.
func drain(t *testing.T, fd int) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EAGAIN {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return got
		}
		got = append(got, buf[:n]...)
	}
}

func TestWriteGoesStraightToTheSocket(t *testing.T) {
	q, peer := socketPair(t)
	Write(q, []byte("ok 1\n"))
	Write(q, []byte("ok 2\n"))
	if q.calls != 0 {
		t.Fatalf("gnet's Write called %d times for replies the socket had room for", q.calls)
	}
	if got := drain(t, peer); string(got) != "ok 1\nok 2\n" {
		t.Fatalf("peer received %q", got)
	}
}

// What the socket does not take goes to gnet's queue, and so does
// everything after it until the queue drains: nothing overtakes it.
func TestWriteQueuesWhatTheSocketRefuses(t *testing.T) {
	q, peer := socketPair(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, more than the socket holds
	Write(q, big)
	if q.calls != 1 || len(q.queued) == 0 || len(q.queued) == len(big) {
		t.Fatalf("after a write larger than the socket: gnet's Write called %d times with %d of %d bytes; want once, with the part the socket refused", q.calls, len(q.queued), len(big))
	}
	Write(q, []byte("tail\n"))
	if q.calls != 2 {
		t.Fatalf("a reply behind queued output went to the socket first (gnet's Write called %d times, want 2)", q.calls)
	}
	got := append(drain(t, peer), q.queued...)
	if want := append(bytes.Clone(big), "tail\n"...); !bytes.Equal(got, want) {
		t.Fatalf("socket and queue together hold %d bytes, not the %d written, in order", len(got), len(want))
	}
}

// A socket that fails leaves the bytes to gnet's Write, which meets the
// error itself and closes the connection.
func TestWriteLeavesErrorsToGnet(t *testing.T) {
	q, peer := socketPair(t)
	unix.Close(peer)
	Write(q, []byte("ok\n")) // EPIPE
	if q.calls != 1 || string(q.queued) != "ok\n" {
		t.Fatalf("write to a socket whose peer closed: gnet's Write got %q in %d calls, want the reply once", q.queued, q.calls)
	}
}
