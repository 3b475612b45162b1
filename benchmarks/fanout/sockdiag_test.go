package fanout

import (
	"net"
	"strings"
	"testing"
	"time"
)

// The watch sees the server's end of a connection open, then closed even
// though the client has unread data and so cannot see the close itself.
func TestSockWatch(t *testing.T) {
	c, srv := loopbackPair(t, func(addr string) (net.Conn, error) { return dialSlow(addr, 4096) })
	w, err := newSockWatch(c)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if open, err := w.open(); err != nil || !open {
		t.Fatalf("open=%v err=%v, want an open server end", open, err)
	}
	// Fill the client's window, then close the server's end.
	_ = srv.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		if _, err := srv.Write(make([]byte, 64<<10)); err != nil {
			break
		}
	}
	_ = srv.Close()
	if open, err := w.open(); err != nil || open {
		t.Fatalf("open=%v err=%v after the server's close", open, err)
	}
	// Closed with a backlog the client has not read: an orphan, still there.
	if exists, err := w.exists(); err != nil || !exists {
		t.Fatalf("exists=%v err=%v for the server's orphaned socket", exists, err)
	}
	// A connection that never existed is reported closed, not an error.
	w2, err := newSockWatch(&fakeAddrConn{Conn: c, local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.close()
	if open, err := w2.open(); err != nil || open {
		t.Fatalf("unknown socket: open=%v err=%v", open, err)
	}
	if exists, err := w2.exists(); err != nil || exists {
		t.Fatalf("unknown socket: exists=%v err=%v", exists, err)
	}
}

// loopbackPair connects a client made by dial to a loopback listener and
// returns both ends; the test's cleanup closes them.
func loopbackPair(t *testing.T, dial func(addr string) (net.Conn, error)) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	client, err = dial(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	t.Cleanup(func() { server.Close() })
	return client, server
}

type fakeAddrConn struct {
	net.Conn
	local *net.TCPAddr
}

func (c *fakeAddrConn) LocalAddr() net.Addr { return c.local }

// A server socket the kernel discarded without a reset (an orphan it
// dropped, backlog and all) leaves the client's end open and silent:
// draining counts that as closed, while a silent server socket the
// kernel still has is an error once the timeout has passed.
func TestDrainClosedDiscardedOrphan(t *testing.T) {
	c, srv := loopbackPair(t, func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) })
	if _, err := srv.Write([]byte("some backlog\n")); err != nil {
		t.Fatal(err)
	}
	r := &run{cfg: Config{Name: "fake", Timeout: time.Second}}

	// The watch names a socket the kernel does not have: discarded.
	gone, err := newSockWatch(&fakeAddrConn{Conn: c, local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.close()
	n, err := r.drainClosed(c, gone)
	if err != nil || n != int64(len("some backlog\n")) {
		t.Fatalf("discarded server socket: read %d, %v; want the backlog and no error", n, err)
	}

	// The server's socket is there and open, and sends nothing more.
	w, err := newSockWatch(c)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if _, err := r.drainClosed(c, w); err == nil || !strings.Contains(err.Error(), "still open") {
		t.Fatalf("silent open server socket: %v, want \"still open\"", err)
	}
}
