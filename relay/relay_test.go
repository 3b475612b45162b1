package relay

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Tests of the relay of --cluster-forward in process:
// the leader is a fake line server on loopback, the leadership a value
// the test sets, and "this member" a real netconn server over a
// single-node hub. The multi-process tests are in
// forward_process_test.go.

// fakeLeader is a leader's client listener: it answers each line with
// "echo <line>", and on the client's EOF says "bye" and closes.
type fakeLeader struct {
	t        *testing.T
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newFakeLeader(t *testing.T) *fakeLeader {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &fakeLeader{t: t, ln: ln}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			l.mu.Lock()
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := io.WriteString(c, "echo "+sc.Text()+"\n"); err != nil {
						return
					}
				}
				if sc.Err() == nil {
					_, _ = io.WriteString(c, "bye\n")
				}
			}()
		}
	}()
	t.Cleanup(l.close)
	return l
}

func (l *fakeLeader) addr() string { return l.ln.Addr().String() }

// dropAll closes every connection the leader accepted, as a leader that
// dies does.
func (l *fakeLeader) dropAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

func (l *fakeLeader) close() {
	_ = l.ln.Close()
	l.dropAll()
	l.wg.Wait()
}

// fwHarness is a Relay of member n1 over a loopback listener, with a
// netconn server (a single node) serving what n1 keeps.
type fwHarness struct {
	t     *testing.T
	f     *Relay
	srv   *netconn.Server
	addr  string
	lim   *conncap.Limiter
	state atomic.Pointer[Leader]
	down  sync.Once
}

func startForwarder(t *testing.T, lim *conncap.Limiter, wait time.Duration, st Leader) *fwHarness {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &fwHarness{t: t, addr: ln.Addr().String(), lim: lim}
	h.state.Store(&st)
	h.f = New(Config{Self: "n1", State: func() Leader { return *h.state.Load() },
		Listener: ln, Limiter: lim, Wait: wait, WriteTimeout: 5 * time.Second})
	hub := session.NewServerHub(session.Config{}, engine.Config{}, timerwheel.NewMonoClock(), time.Hour)
	h.srv = netconn.New(hub, netconn.Config{QuietInterval: -1})
	h.f.SetServer(h.srv)
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(h.f.Listener(), session.Dflockd) }()
	t.Cleanup(func() {
		h.stop(time.Second)
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

func (h *fwHarness) set(st Leader) { h.state.Store(&st); h.f.poke() }

// stop shuts the Relay and the server down, relays given d to end.
func (h *fwHarness) stop(d time.Duration) {
	h.down.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); h.f.Shutdown(ctx) }()
		_ = h.srv.Shutdown(ctx)
		<-done
	})
}

// fwClient is a test's client connection.
type fwClient struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialFw(t *testing.T, addr string) *fwClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &fwClient{t: t, c: c, rd: bufio.NewReader(c)}
}

func (c *fwClient) send(s string) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatal(err)
	}
}

func (c *fwClient) line(within time.Duration) string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(within))
	s, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a line: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// closed asserts that the other end closed the connection (nothing more
// to read) within 10 s.
func (c *fwClient) closed() {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(c.rd)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("the connection is still open (read %q)", rest)
	}
	if len(rest) > 0 {
		c.t.Fatalf("read %q before the close", rest)
	}
}

// fwEventually polls cond until it holds, failing after 10 s.
func fwEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A follower relays byte for byte; the client's half-close reaches the
// leader, whose last reply still comes back, and the leader's close ends
// the relay and frees its place under the caps.
func TestForwardRelaysToLeader(t *testing.T) {
	ldr := newFakeLeader(t)
	lim := &conncap.Limiter{}
	h := startForwarder(t, lim, time.Minute, Leader{ID: "n2", Addr: ldr.addr()})
	c := dialFw(t, h.addr)
	c.send("l\nmy-job\n0 30\n")
	for _, want := range []string{"echo l", "echo my-job", "echo 0 30"} {
		if got := c.line(10 * time.Second); got != want {
			t.Fatalf("relayed reply %q, want %q", got, want)
		}
	}
	if n := lim.Open(); n != 1 {
		t.Fatalf("%d connections admitted, want 1", n)
	}
	if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := c.line(10 * time.Second); got != "bye" {
		t.Fatalf("after the half-close: %q, want the leader's bye", got)
	}
	c.closed()
	fwEventually(t, "the relay to end", func() bool { return lim.Open() == 0 })
}

// --max-connections counts the connections a follower relays: one over
// the cap is closed without a byte and never reaches the leader.
func TestForwardMaxConnectionsCountsRelays(t *testing.T) {
	ldr := newFakeLeader(t)
	lim := &conncap.Limiter{Max: 2}
	h := startForwarder(t, lim, time.Minute, Leader{ID: "n2", Addr: ldr.addr()})
	a, b := dialFw(t, h.addr), dialFw(t, h.addr)
	for _, c := range []*fwClient{a, b} {
		c.send("ping\n")
		if got := c.line(10 * time.Second); got != "echo ping" {
			t.Fatalf("relayed: %q", got)
		}
	}
	over := dialFw(t, h.addr)
	over.closed()
	if n := ldr.accepted.Load(); n != 2 {
		t.Fatalf("the leader accepted %d connections, want 2", n)
	}
	a.c.Close()
	fwEventually(t, "a's place to be freed", func() bool { return lim.Open() == 1 })
	c := dialFw(t, h.addr)
	c.send("ping\n")
	if got := c.line(10 * time.Second); got != "echo ping" {
		t.Fatalf("relayed after a place was freed: %q", got)
	}
}

// A connection accepted while no leader is known waits for one, unread,
// and is relayed once one is.
func TestForwardWaitsForALeader(t *testing.T) {
	ldr := newFakeLeader(t)
	h := startForwarder(t, nil, time.Minute, Leader{})
	c := dialFw(t, h.addr)
	c.send("ping\n")
	_ = c.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.rd.ReadString('\n'); err == nil {
		t.Fatal("answered while no leader was known")
	}
	h.set(Leader{ID: "n2", Addr: ldr.addr()})
	if got := c.line(10 * time.Second); got != "echo ping" {
		t.Fatalf("after the election: %q, want the leader's echo", got)
	}
}

// Without a leader for the whole wait, a connection is served by this
// member (as without --cluster-forward); once another member leads, it
// is hung up so that its client comes back through that leader. Once
// this member leads, its connections are its own and stay.
func TestForwardStrayHungUpWhenALeaderIsKnown(t *testing.T) {
	ldr := newFakeLeader(t)
	h := startForwarder(t, nil, 100*time.Millisecond, Leader{})
	c := dialFw(t, h.addr)
	c.send("ping\n_\n_\n")
	if got := c.line(10 * time.Second); got != "ok" {
		t.Fatalf("served locally: %q", got)
	}
	h.set(Leader{ID: "n2", Addr: ldr.addr()})
	c.closed()

	h.set(Leader{})
	kept := dialFw(t, h.addr)
	kept.send("ping\n_\n_\n")
	if got := kept.line(10 * time.Second); got != "ok" {
		t.Fatalf("served locally: %q", got)
	}
	h.set(Leader{ID: "n1", Addr: h.addr, Leading: true})
	fwEventually(t, "the stray to be adopted", func() bool {
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		return len(h.f.mu.strays) == 0
	})
	h.set(Leader{ID: "n2", Addr: ldr.addr()})
	kept.send("ping\n_\n_\n")
	if got := kept.line(10 * time.Second); got != "ok" {
		t.Fatalf("a connection of the leader's was hung up as a stray: %q", got)
	}
	// A deposed leader hangs up on all of its clients.
	h.f.Deposed()
	kept.closed()
}

// A relay ends when its leader closes it (it died, or was deposed) and
// when this member learns of another leader; a connection of this
// member's, when it is deposed.
func TestForwardRelayEnds(t *testing.T) {
	a, b := newFakeLeader(t), newFakeLeader(t)
	h := startForwarder(t, nil, time.Minute, Leader{ID: "n2", Addr: a.addr()})
	c := dialFw(t, h.addr)
	c.send("x\n")
	if got := c.line(10 * time.Second); got != "echo x" {
		t.Fatal(got)
	}
	a.dropAll()
	c.closed()

	c = dialFw(t, h.addr)
	c.send("y\n")
	if got := c.line(10 * time.Second); got != "echo y" {
		t.Fatal(got)
	}
	h.set(Leader{}) // an election: the relay stays
	c.send("z\n")
	if got := c.line(10 * time.Second); got != "echo z" {
		t.Fatalf("during an election: %q", got)
	}
	h.set(Leader{ID: "n3", Addr: b.addr()})
	c.closed()
	c = dialFw(t, h.addr)
	c.send("w\n")
	if got := c.line(10 * time.Second); got != "echo w" || b.accepted.Load() != 1 {
		t.Fatalf("to the new leader: %q (it accepted %d)", got, b.accepted.Load())
	}
}

// A leader whose client address is this member's own listener (a
// misconfiguration) is not relayed to, and no connection goes round: the
// client is served here after the wait, then hung up, since a leader
// other than this member is known.
func TestForwardDoesNotRelayToItself(t *testing.T) {
	lim := &conncap.Limiter{Max: 3}
	h := startForwarder(t, lim, 300*time.Millisecond, Leader{})
	h.set(Leader{ID: "n2", Addr: h.addr})
	c := dialFw(t, h.addr)
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.ReadAll(c.rd)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the client is neither served nor closed")
	}
	fwEventually(t, "every connection to end", func() bool { return lim.Open() == 0 })
	h.f.mu.Lock()
	self := h.f.mu.selfAddr
	h.f.mu.Unlock()
	if self != h.addr {
		t.Fatalf("self address %q, want %q noted", self, h.addr)
	}
}

// dialedSelf recognises this member's own listener.
func TestDialedSelf(t *testing.T) {
	tcp := func(s string) *net.TCPAddr { a, _ := net.ResolveTCPAddr("tcp", s); return a }
	tests := []struct {
		ln, local, remote string
		want              bool
	}{
		{"127.0.0.1:6391", "127.0.0.1:40000", "127.0.0.1:6391", true},
		{"127.0.0.1:6391", "127.0.0.1:40000", "127.0.0.1:6392", false},
		{"0.0.0.0:6391", "10.0.0.5:40000", "10.0.0.5:6391", true},
		{"0.0.0.0:6391", "10.0.0.5:40000", "10.0.0.6:6391", false},
		{"[::]:6391", "[::1]:40000", "[::1]:6391", true},
		{"10.0.0.5:6391", "10.0.0.5:40000", "10.0.0.6:6391", false},
	}
	for _, tt := range tests {
		up := fwFakeConn{local: tcp(tt.local), remote: tcp(tt.remote)}
		if got := dialedSelf(up, tcp(tt.ln)); got != tt.want {
			t.Errorf("listener %s, %s -> %s: %v, want %v", tt.ln, tt.local, tt.remote, got, tt.want)
		}
	}
}

type fwFakeConn struct {
	net.Conn
	local, remote net.Addr
}

func (c fwFakeConn) LocalAddr() net.Addr  { return c.local }
func (c fwFakeConn) RemoteAddr() net.Addr { return c.remote }

// openFDs counts this process's open descriptors (Linux), -1 elsewhere.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// Relays leak neither goroutines nor descriptors, however they end:
// the client closes, half-closes, or resets; the leader closes; the
// leadership moves; Shutdown closes what is left after its deadline.
func TestForwardNoLeaks(t *testing.T) {
	fds, goroutines := openFDs(), runtime.NumGoroutine()
	func() {
		a, b := newFakeLeader(t), newFakeLeader(t)
		defer a.close()
		defer b.close()
		lim := &conncap.Limiter{}
		h := startForwarder(t, lim, 200*time.Millisecond, Leader{ID: "n2", Addr: a.addr()})
		defer h.stop(time.Second)
		var clients []*fwClient
		for i := range 40 {
			c := dialFw(t, h.addr)
			c.send("ping\n")
			if got := c.line(10 * time.Second); got != "echo ping" {
				t.Fatalf("client %d: %q", i, got)
			}
			clients = append(clients, c)
		}
		for i, c := range clients[:30] {
			switch i % 3 {
			case 0:
				c.c.Close()
			case 1:
				_ = c.c.(*net.TCPConn).CloseWrite()
				if got := c.line(10 * time.Second); got != "bye" {
					t.Fatalf("half-closed client %d: %q", i, got)
				}
				c.closed()
				c.c.Close()
			case 2:
				_ = c.c.(*net.TCPConn).SetLinger(0) // a reset
				c.c.Close()
			}
		}
		fwEventually(t, "30 relays to end", func() bool { return lim.Open() == 10 })
		a.dropAll() // the leader's end closes: 5 of the 10 left go
		fwEventually(t, "the leader's relays to end", func() bool { return lim.Open() == 0 })
		for range 5 {
			c := dialFw(t, h.addr)
			c.send("ping\n")
			c.line(10 * time.Second)
			clients = append(clients, c)
		}
		h.set(Leader{ID: "n3", Addr: b.addr()}) // the leadership moves
		fwEventually(t, "the relays to a former leader to end", func() bool { return lim.Open() == 0 })
		for range 5 {
			c := dialFw(t, h.addr)
			c.send("ping\n")
			c.line(10 * time.Second)
			clients = append(clients, c)
		}
		h.set(Leader{}) // an election: the relays stay, a new client waits
		clients = append(clients, dialFw(t, h.addr))
		fwEventually(t, "the new client to be admitted", func() bool { return lim.Open() == 6 })
		h.stop(100 * time.Millisecond) // closes the relays after its deadline
		if n := lim.Open(); n != 0 {
			t.Fatalf("%d connections admitted after shutdown", n)
		}
		for _, c := range clients {
			c.c.Close()
		}
	}()
	fwEventually(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
	if fds >= 0 {
		fwEventually(t, "the descriptors to be closed", func() bool { return openFDs() <= fds })
	}
}
