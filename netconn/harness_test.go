package netconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/tlscert"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// The loopback suite of the package: a real hub and engine in process, a
// Server on a loopback listener, and clients over TLS (certificates from
// certtest). Time is a fake clock that the tests move by hand (tick): the
// read, write and handshake deadlines, the auth cool-down and the engine's
// timeouts happen when a test says so, not when a machine is slow.

// harness is one server under test.
type harness struct {
	t     *testing.T
	clock *timerwheel.FakeClock
	hub   *session.Hub
	srv   *Server
	addr  string
	ca    *certtest.CA
	store *tlscert.Store
	// certFile and keyFile are the store's files (a reload rewrites them).
	certFile, keyFile string
	// accepted holds the server side of every accepted socket, as the
	// server reads it (countingConn).
	accepted struct {
		sync.Mutex
		list []*countingConn
	}
	served chan error
	fx     engine.Effects // tick's; one test goroutine
}

// options configure a harness; the zero value is a v2 TLS server.
type options struct {
	sess  session.Config
	eng   engine.Config
	cfg   Config // TLS is set by start unless plain
	plain bool
	proto session.Protocol
	// smallBuffers shrinks the kernel buffers of accepted sockets, so
	// that flow control holds a client back after little data.
	smallBuffers bool
}

func start(t *testing.T, o options) *harness {
	t.Helper()
	h := &harness{t: t, clock: timerwheel.NewFakeClock(1000), served: make(chan error, 1)}
	// The hub's housekeeping is not started: tick drives the engine's
	// timers at the fake clock's time.
	h.hub = session.NewServerHub(o.sess, o.eng, h.clock, time.Hour)
	cfg := o.cfg
	if !o.plain {
		h.ca = certtest.NewCA(t, "netconn test CA")
		h.certFile, h.keyFile = h.ca.Leaf(t, "server").Write(t, t.TempDir())
		st, err := tlscert.Load(h.certFile, h.keyFile)
		if err != nil {
			t.Fatal(err)
		}
		h.store = st
		cfg.TLS = st.Config()
	}
	h.srv = New(h.hub, cfg)
	var lc net.ListenConfig
	if o.smallBuffers {
		// Accepted sockets inherit the listener's buffer sizes, set before
		// the handshake that fixes the window scale: a buffer shrunk after
		// it makes a window the peer can only probe.
		lc.Control = shrinkBuffers
	}
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = l.Addr().String()
	go func() { h.served <- h.srv.Serve(&countingListener{Listener: l, h: h}, o.proto) }()
	t.Cleanup(func() {
		_ = h.srv.Close()
		select {
		case err := <-h.served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return h
}

// tick moves the clock by d and fires every timer due: the engine's and
// the connections'.
func (h *harness) tick(d time.Duration) {
	h.clock.Add(timerwheel.Tick(d.Milliseconds()))
	now := h.clock.Now()
	for i := range h.hub.Engine().Shards() {
		h.hub.Advance(i, &h.fx)
	}
	h.srv.driver.RunOnce(now)
}

// shutdown runs the server's Shutdown with a deadline.
func (h *harness) shutdown(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// conns returns the server's open connections.
func (h *harness) conns() []*conn {
	h.srv.mu.Lock()
	defer h.srv.mu.Unlock()
	var out []*conn
	for c := range h.srv.mu.conns {
		out = append(out, c)
	}
	return out
}

// waiters reports how many requests wait for lock k.
func (h *harness) waiters(k string) int {
	for _, l := range h.hub.Engine().LockStats(h.clock.Now(), 0).Locks {
		if l.Key == k {
			return l.Waiters
		}
	}
	return 0
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// clientTLS is a client config that trusts the harness's CA.
func (h *harness) clientTLS() *tls.Config { return certtest.ClientConfig(h.ca.Pool) }

// dial connects a TLS client (or a plain one to a plain server).
func (h *harness) dial(t *testing.T) *client {
	t.Helper()
	var c net.Conn
	var err error
	if h.store != nil {
		c, err = tls.Dial("tcp", h.addr, h.clientTLS())
	} else {
		c, err = net.Dial("tcp", h.addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, rd: bufio.NewReader(c)}
}

// smallBuffer is the socket buffer size of options.smallBuffers (the
// kernel doubles it).
const smallBuffer = 16 << 10

// shrinkBuffers is a net.ListenConfig or net.Dialer Control function.
func shrinkBuffers(_, _ string, rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, smallBuffer)
		if err == nil {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, smallBuffer)
		}
	}); cerr != nil {
		return cerr
	}
	return err
}

// dialSmall connects a TLS client whose socket has small kernel buffers.
func (h *harness) dialSmall(t *testing.T) *client {
	t.Helper()
	d := net.Dialer{Control: shrinkBuffers}
	raw, err := d.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, h.clientTLS())
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, rd: bufio.NewReader(c)}
}

// dialRaw connects over TCP without TLS.
func (h *harness) dialRaw(t *testing.T) *client {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, rd: bufio.NewReader(c)}
}

type client struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

// request is one frame in wire form.
func request(cmd, key, arg string) string { return cmd + "\n" + key + "\n" + arg + "\n" }

func (c *client) send(cmd, key, arg string) { c.t.Helper(); c.raw(request(cmd, key, arg)) }

func (c *client) raw(s string) {
	c.t.Helper()
	_ = c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// line reads one reply line (without its LF) within 10 s.
func (c *client) line() string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a reply: %v (got %q)", err, s)
	}
	return strings.TrimSuffix(s, "\n")
}

// do sends a request and returns its reply.
func (c *client) do(cmd, key, arg string) string {
	c.t.Helper()
	c.send(cmd, key, arg)
	return c.line()
}

// expect fails unless the next reply is want (a T stands for any token).
func (c *client) expect(want string) string {
	c.t.Helper()
	got := c.line()
	if !match(got, want) {
		c.t.Fatalf("reply %q, want %q", got, want)
	}
	return got
}

// grant sends a request that must be granted at once and returns its
// token.
func (c *client) grant(cmd, key, arg string) string {
	c.t.Helper()
	got := c.do(cmd, key, arg)
	f := strings.Fields(got)
	if len(f) != 3 || f[0] != "ok" || !isToken(f[1]) {
		c.t.Fatalf("%s %s %s: %q, want a grant", cmd, key, arg, got)
	}
	return f[1]
}

// closed asserts that the server closed the connection, having sent
// nothing more.
func (c *client) closed() {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(c.rd)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("the connection is still open (read %q)", rest)
	}
	if len(rest) > 0 {
		c.t.Fatalf("got %q before the close", rest)
	}
}

// match compares a reply with a pattern in which the word T matches any
// token.
func match(got, want string) bool {
	g, w := strings.Split(got, " "), strings.Split(want, " ")
	if len(g) != len(w) {
		return false
	}
	for i := range w {
		if w[i] == "T" && isToken(g[i]) || w[i] == g[i] {
			continue
		}
		return false
	}
	return true
}

func isToken(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := strconv.ParseUint(s[:16], 16, 64)
	_, err2 := strconv.ParseUint(s[16:], 16, 64)
	return err == nil && err2 == nil
}

// countingListener wraps the accepted sockets in countingConns, so tests
// can see what the server reads.
type countingListener struct {
	net.Listener
	h *harness
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.h.accepted.Lock()
	l.h.accepted.list = append(l.h.accepted.list, cc)
	l.h.accepted.Unlock()
	return cc, nil
}

// countingConn counts the bytes the server read from the socket and says
// whether a Read call is in progress.
type countingConn struct {
	net.Conn
	read    atomic.Int64
	reading atomic.Bool
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.reading.Store(true)
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	c.reading.Store(false)
	return n, err
}

// acceptedCount reports how many sockets the server accepted.
func (h *harness) acceptedCount() int {
	h.accepted.Lock()
	defer h.accepted.Unlock()
	return len(h.accepted.list)
}

// lastAccepted returns the server side of the latest accepted socket.
func (h *harness) lastAccepted() *countingConn {
	h.accepted.Lock()
	defer h.accepted.Unlock()
	if len(h.accepted.list) == 0 {
		h.t.Fatal("no connection accepted")
	}
	return h.accepted.list[len(h.accepted.list)-1]
}
