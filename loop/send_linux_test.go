//go:build linux

package loop

import (
	"testing"

	"golang.org/x/sys/unix"
)

// fdConn is a recording gnet connection with a real socket behind Fd.
type fdConn struct {
	writeCounter
	fd int
}

func (f *fdConn) Fd() int { return f.fd }

// A closed connection's descriptor may already be another connection's:
// its bytes go to gnet's Write, never to the socket.
func TestSendAfterCloseLeavesTheSocketAlone(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	w := &fdConn{fd: fds[0]}
	(&conn{c: w}).send([]byte("open\n"))
	(&conn{c: w, closed: true}).send([]byte("late\n"))
	buf := make([]byte, 64)
	n, _ := unix.Read(fds[1], buf)
	if string(buf[:max(n, 0)]) != "open\n" || len(w.writes) != 1 || string(w.writes[0]) != "late\n" {
		t.Fatalf("socket received %q, gnet's Write %q; want the open connection's bytes on the socket and the closed one's to gnet", buf[:max(n, 0)], w.writes)
	}
}
