package main

import (
	"net"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/conncap"
)

// TestCappedListener: the godistlock listener of a member with
// --cluster-forward admits under --max-connections itself: a connection
// over the cap is closed unserved, and a closed one frees its place.
func TestCappedListener(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := &conncap.Limiter{Max: 1}
	l := cappedListener{Listener: raw, lim: lim}
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	first := <-accepted
	if lim.Open() != 1 {
		t.Fatalf("%d admitted, want 1", lim.Open())
	}
	second := dial()
	// Refused: closed by the server without a byte.
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := second.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("over the cap: read %d, %v; want the connection closed", n, err)
	}
	if len(accepted) != 0 {
		t.Fatal("a connection over the cap was handed to the server")
	}
	first.Close()
	first.Close() // a second close releases nothing more
	if lim.Open() != 0 {
		t.Fatalf("%d admitted after the close, want 0", lim.Open())
	}
	dial()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("a connection under the cap again was not admitted")
	}
}
