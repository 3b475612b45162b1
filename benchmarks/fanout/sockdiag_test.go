package fanout

import (
	"net"
	"testing"
	"time"
)

// The watch sees the server's end of a connection open, then closed even
// though the client has unread data and so cannot see the close itself.
func TestSockWatch(t *testing.T) {
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
	c, err := dialSlow(ln.Addr().String(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv := <-accepted
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
	// A connection that never existed is reported closed, not an error.
	w2, err := newSockWatch(&fakeAddrConn{Conn: c, local: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.close()
	if open, err := w2.open(); err != nil || open {
		t.Fatalf("unknown socket: open=%v err=%v", open, err)
	}
}

type fakeAddrConn struct {
	net.Conn
	local *net.TCPAddr
}

func (c *fakeAddrConn) LocalAddr() net.Addr { return c.local }
