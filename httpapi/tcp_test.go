package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/loop"
)

// HTTP sessions and TCP clients of one server: the gnet loop (package
// loop) serving the test server's hub on a loopback port.

// startTCP serves ts's hub over the dflockd line protocol; it returns the
// address. The server stops with the test (its Shutdown drains the hub).
func startTCP(t testing.TB, ts *testServer) string {
	t.Helper()
	// Bound here and handed over: no port picked by listening and closing
	// that another process could take before the server binds it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	srv := loop.New(loop.Config{Listeners: []net.Listener{l}, Loops: 2, Hub: ts.hub, Ready: ready}, ts.hub.Clock())
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	// Registered before anything can fail: a Shutdown before the loops
	// run ends Serve as soon as gnet boots.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the TCP server still running 30 s after Shutdown")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("the TCP server: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the TCP server did not start within 20 s")
	}
	return l.Addr().String()
}

// tcpClient is a dflockd line-protocol client.
type tcpClient struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func dialTCP(t testing.TB, addr string) *tcpClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &tcpClient{t: t, c: c, r: bufio.NewReader(c)}
}

func (c *tcpClient) send(cmd, key, arg string) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		c.t.Fatal(err)
	}
}

// reply reads one reply line.
func (c *tcpClient) reply() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(20 * time.Second)) // generous: a bound on a reply that never comes
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

// An HTTP session queues in the same FIFO as TCP clients, and is served
// in its turn, before the TCP client that came after it.
func TestHTTPAndTCPShareTheFIFO(t *testing.T) {
	ts := newServer(t, setup{})
	addr := startTCP(t, ts)
	first, last := dialTCP(t, addr), dialTCP(t, addr)

	first.send("l", "k", "0 30")
	f := strings.Fields(first.reply())
	if len(f) != 3 || f[0] != "ok" {
		t.Fatalf("the first TCP client's lock: %v", f)
	}
	sid := ts.newSession()
	got := async(func() grant { return ts.lock(sid, "k", 60) })
	eventually(t, "the HTTP session to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	last.send("l", "k", "60")
	eventually(t, "the last TCP client to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 2 })

	first.send("r", "k", f[1])
	if r := first.reply(); r != "ok" {
		t.Fatalf("the TCP release: %q", r)
	}
	g := await(t, "the HTTP session's grant", got)
	if g.Status != "ok" || g.Token <= f[1] {
		t.Fatalf("the HTTP session after the TCP holder: %+v, want a grant after %s", g, f[1])
	}
	if st, _ := ts.lockStat("k"); st.Waiters != 1 {
		t.Fatalf("%d waiters while the HTTP session holds, want the last TCP client", st.Waiters)
	}
	ts.release(sid, "k", g.Token)
	l := strings.Fields(last.reply())
	if len(l) != 3 || l[0] != "ok" || l[1] <= g.Token {
		t.Fatalf("the last TCP client: %v, want a grant after the HTTP session's %s", l, g.Token)
	}
	// A TCP client can release what an HTTP session holds, by token, and
	// the reverse (ownership is by token, spec §B.1.6).
	g2 := ts.lock(sid, "t", 0)
	last.send("r", "t", g2.Token)
	if r := last.reply(); r != "ok" {
		t.Fatalf("a TCP release of an HTTP grant: %q", r)
	}
	ts.release(sid, "k", l[1])
	// And the stats count both kinds of connection.
	if n := ts.hub.Connections(); n != 3 {
		t.Fatalf("%d connections, want 3 (two TCP, one HTTP session)", n)
	}
}
