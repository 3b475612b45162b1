package loop

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// One server per configuration for the whole package: gnet's Stop polls
// every 500 ms, so per-test servers would make the suite slow.
var (
	plain    *testServer // no auth
	rfsrv    *testServer // --compat=rf, otherwise as plain
	authed   *testServer // --auth-token
	keySeq   atomic.Int64
	testAuth = "s3cret-token"
)

type testServer struct {
	addr string
	srv  *Server
	eng  *engine.Engine
	done chan error
}

// startServer serves cfg on a listener bound here, placed before any in
// cfg.Listeners (the line protocol's comes first): binding and passing
// the socket leaves no gap in which another process could take a port
// picked by listening and closing. If the server does not come up, it is
// shut down and the listeners closed before the error returns.
func startServer(cfg Config, ecfg engine.Config) (*testServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		for _, l := range cfg.Listeners {
			l.Close()
		}
		return nil, err
	}
	cfg.Listeners = append([]net.Listener{l}, cfg.Listeners...)
	ready := make(chan struct{})
	cfg.Loops = 2 // consecutive connections land on different loops
	cfg.Ready = ready
	clock := timerwheel.NewMonoClock()
	cfg.Engine = ecfg
	srv := New(cfg, clock)
	ts := &testServer{addr: l.Addr().String(), srv: srv, eng: srv.Engine(), done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve() }()
	select {
	case <-ready:
		return ts, nil
	case err := <-ts.done:
		closeAll(cfg.Listeners)
		return nil, fmt.Errorf("serve: %v", err)
	case <-time.After(20 * time.Second):
		// A Shutdown before the loops run ends Serve as soon as gnet
		// boots; wait for it, within bounds, so nothing is left serving.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		select {
		case <-ts.done:
		case <-time.After(20 * time.Second):
		}
		closeAll(cfg.Listeners)
		return nil, fmt.Errorf("server did not start within 20 s")
	}
}

// closeAll closes listeners a server that failed to start may have left
// open (closing one twice is harmless).
func closeAll(ls []net.Listener) {
	for _, l := range ls {
		_ = l.Close()
	}
}

func (ts *testServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)
	<-ts.done
}

func TestMain(m *testing.M) {
	var err error
	plain, err = startServer(Config{ReadTimeout: 3 * time.Second, WriteTimeout: time.Second},
		engine.Config{MaxLocks: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// An hour-long GC period: leases must end, and watchers hear of it,
	// without a GC pass (issue #34), and the records that answer an
	// expired lease's renew in rf (spec §I.2 O3) are the GC's to forget.
	rfsrv, err = startServer(Config{Profile: vocab.ProfileRF, ReadTimeout: 3 * time.Second, WriteTimeout: time.Second,
		GCInterval: time.Hour}, engine.Config{Profile: vocab.ProfileRF, MaxLocks: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	authed, err = startServer(Config{AuthToken: testAuth}, engine.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	plain.stop()
	rfsrv.stop()
	authed.stop()
	os.Exit(code)
}

// key returns a key no other test uses.
func key(name string) string { return fmt.Sprintf("%s-%d", name, keySeq.Add(1)) }

type client struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dial(t *testing.T, ts *testServer) *client {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, rd: bufio.NewReader(c)}
}

func (c *client) send(cmd, key, arg string) {
	c.t.Helper()
	c.raw(cmd + "\n" + key + "\n" + arg + "\n")
}

func (c *client) raw(s string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// replyWithin bounds the wait for a reply or a close that must come. It
// is generous on purpose: on a loaded machine (the race detector, two
// shared cores) a reply can take seconds, and only a server that never
// answers should run it out.
const replyWithin = 20 * time.Second

// line reads one reply line within d.
func (c *client) line(d time.Duration) (string, error) {
	c.c.SetReadDeadline(time.Now().Add(d))
	s, err := c.rd.ReadString('\n')
	return strings.TrimSuffix(s, "\n"), err
}

func (c *client) expect(want string) string {
	c.t.Helper()
	got, err := c.line(replyWithin)
	if err != nil {
		c.t.Fatalf("waiting for %q: %v", want, err)
	}
	if !match(got, want) {
		c.t.Fatalf("got %q, want %q", got, want)
	}
	return got
}

// do sends one request and checks the reply against want (see match);
// it returns the reply's fields.
func (c *client) do(cmd, key, arg, want string) []string {
	c.t.Helper()
	c.send(cmd, key, arg)
	return strings.Fields(c.expect(want))
}

// ask sends one request and returns its reply, whatever it is.
func (c *client) ask(cmd, key, arg string) string {
	c.t.Helper()
	c.send(cmd, key, arg)
	got, err := c.line(replyWithin)
	if err != nil {
		c.t.Fatalf("%s %s: %v", cmd, key, err)
	}
	return got
}

// match compares a reply with a pattern in which the word T matches any
// token, F the decimal fence of the last token before it on the line (rf
// grants, spec §B.0 and §I.2: the fence is the token's prefix) and * any
// single word.
func match(got, want string) bool {
	g, w := strings.Split(got, " "), strings.Split(want, " ")
	if len(g) != len(w) {
		return false
	}
	tok := ""
	for i := range w {
		switch w[i] {
		case "T":
			if !isToken(g[i]) {
				return false
			}
		case "F":
			if tok == "" || g[i] != fenceText(tok) {
				return false
			}
		case "*":
		default:
			if g[i] != w[i] {
				return false
			}
		}
		if isToken(g[i]) {
			tok = g[i]
		}
	}
	return true
}

// fenceText is the decimal fence of a token: its first 16 hex digits.
func fenceText(tok string) string {
	f, err := strconv.ParseUint(tok[:16], 16, 64)
	if err != nil {
		panic("fenceText " + tok)
	}
	return strconv.FormatUint(f, 10)
}

func isToken(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// silent asserts that no reply arrives within d.
func (c *client) silent(d time.Duration) {
	c.t.Helper()
	if got, err := c.line(d); err == nil {
		c.t.Fatalf("unexpected reply %q", got)
	}
}

// closed asserts that the server closed the connection.
func (c *client) closed() {
	c.t.Helper()
	got, err := c.line(replyWithin)
	if err == nil {
		c.t.Fatalf("expected close, got %q", got)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("connection still open")
	}
}

// wireProfile is the rf profile if rf, else v2.
func wireProfile(rf bool) vocab.Profile {
	if rf {
		return vocab.ProfileRF
	}
	return vocab.ProfileV2
}
