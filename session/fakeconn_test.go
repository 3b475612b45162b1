package session

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Unit tests of protocol sessions without sockets or gnet: a fake
// Transport over byte slices, driven synchronously on the test goroutine
// as an event loop would drive a real one.

// fakeConn is a Transport over byte slices. Reader semantics follow a
// gnet connection: Input sees everything buffered; what it consumes is
// discarded.
type fakeConn struct {
	fs   *fakeServer
	sess *Session

	in     []byte // inbound bytes not yet consumed
	out    []byte // everything the peer received
	wakes  int
	closed bool // the connection was closed (and Session.Closed ran)
	// store backs in for load, so that benchmarks feed without allocating.
	store []byte
	// poison makes feed copy the unread input into a new buffer and
	// scribble over the old one, as gnet's read buffer is reused after a
	// read: a slice of the input kept too long reads garbage.
	poison bool
	// stalled: the peer does not read; writes wait in unsent (the
	// transport's output buffer) until the test calls drainOut.
	stalled bool
	unsent  []byte
	remote  net.Addr
	cert    *x509.Certificate // PeerCertificate: as a verified client certificate
	// The session's timer.
	timerAt    timerwheel.Tick
	timerArmed bool
	// readPaused: PauseRead was called and not undone. pausable makes
	// PauseRead succeed (a transport that can stop reading).
	readPaused bool
	pausable   bool
	resumes    int // ResumeRead calls
	// posted holds results Post queued, from any goroutine.
	mu     sync.Mutex
	posted []engine.Result
}

func (c *fakeConn) InboundBuffered() int { return len(c.in) }
func (c *fakeConn) Unsent() int          { return len(c.unsent) }

// RemoteAddr is the same loopback address for every fake conn, unless
// the test sets remote.
func (c *fakeConn) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}

func (c *fakeConn) Write(p []byte) {
	if c.stalled || len(c.unsent) > 0 {
		c.unsent = append(c.unsent, p...)
		return
	}
	c.out = append(c.out, p...)
}

// drainOut lets the peer read n bytes of what waits (n < 0: all of it).
func (c *fakeConn) drainOut(n int) {
	if n < 0 || n > len(c.unsent) {
		n = len(c.unsent)
	}
	c.out = append(c.out, c.unsent[:n]...)
	c.unsent = c.unsent[n:]
}

// Wake asks for Input to run again later; pump does that.
func (c *fakeConn) Wake() {
	c.wakes++
	c.fs.woken = append(c.fs.woken, c)
}

// Close is asynchronous, as in gnet: Closed runs later; pump runs it.
func (c *fakeConn) Close() { c.fs.closing = append(c.fs.closing, c) }

func (c *fakeConn) Yield() bool { return false }

func (c *fakeConn) PauseRead() bool {
	if c.pausable {
		c.readPaused = true
	}
	return c.pausable
}

func (c *fakeConn) ResumeRead() { c.readPaused, c.resumes = false, c.resumes+1 }

// SetTimer keeps the earliest time asked for, as the loop's timer does.
func (c *fakeConn) SetTimer(at timerwheel.Tick) {
	if !c.timerArmed || at < c.timerAt {
		c.timerAt, c.timerArmed = at, true
	}
}

func (c *fakeConn) Scratch() *Scratch { return &c.fs.scratch }

func (c *fakeConn) Post(r engine.Result) {
	c.mu.Lock()
	c.posted = append(c.posted, r)
	c.mu.Unlock()
}

// feed appends bytes as a socket read would.
func (c *fakeConn) feed(b []byte) {
	if !c.poison {
		c.in = append(c.in, b...)
		return
	}
	in := make([]byte, 0, len(c.in)+len(b))
	in = append(append(in, c.in...), b...)
	for i := range c.in {
		c.in[i] = '#'
	}
	c.in = in
}

// load replaces the input with b, reusing c.store.
func (c *fakeConn) load(b []byte) {
	c.store = append(c.store[:0], b...)
	c.in = c.store
}

// fakeServer is a hub, its engine and its fake connections, on one
// goroutine.
type fakeServer struct {
	t       testing.TB
	clock   *timerwheel.FakeClock
	hub     *Hub
	eng     *engine.Engine
	conns   []*fakeConn
	scratch Scratch
	woken   []*fakeConn
	closing []*fakeConn
}

// testTokenKey keys the fake engine's token salts.
var testTokenKey = engine.TokenKey{9, 8, 7, 6, 5, 4, 3, 2, 1}

// newFakeServer builds an engine and a hub as the server does, on a fake
// clock. Fences count from 1 and the token key is fixed, so token texts
// are known in advance (tokenFor).
func newFakeServer(t testing.TB, cfg Config, ecfg engine.Config) *fakeServer {
	t.Helper()
	fs := &fakeServer{t: t, clock: timerwheel.NewFakeClock(1000)}
	if ecfg.Shards == 0 {
		ecfg.Shards = 4
	}
	ecfg.Profile = cfg.Profile
	ecfg.Start = fs.clock.Now()
	if ecfg.TokenKey == (engine.TokenKey{}) {
		ecfg.TokenKey = testTokenKey
	}
	fs.eng = engine.New(ecfg)
	fs.hub = NewHub(cfg, fs.eng, fs.clock)
	return fs
}

// tokenEngine computes the tokens of fake servers' engines: a token
// depends only on its fence and the key.
var tokenEngine = engine.New(engine.Config{Shards: 1, TokenKey: testTokenKey})

// tokenFor is the token text of the grant that receives fence f on a fake
// server's engine.
func tokenFor(f uint64) string { return string(tokenEngine.Token(f).Append(nil)) }

// open connects a new fake conn.
func (fs *fakeServer) open() *fakeConn {
	fs.t.Helper()
	return fs.openFrom(nil)
}

// openFrom opens a connection whose peer is at remote (nil: the default).
func (fs *fakeServer) openFrom(remote net.Addr) *fakeConn {
	return fs.openProto(remote, Dflockd)
}

// openCertified opens a godistlock connection whose client certificate
// is named name (its common name).
func (fs *fakeServer) openCertified(name string) *fakeConn {
	c := &fakeConn{fs: fs, poison: true, cert: &x509.Certificate{Subject: pkix.Name{CommonName: name}}}
	c.sess = fs.hub.Open(c, Godistlock, c.peer())
	fs.conns = append(fs.conns, c)
	return c
}

// PeerCertificate is the certificate the test gave the connection.
func (c *fakeConn) PeerCertificate() *x509.Certificate { return c.cert }

func (fs *fakeServer) openProto(remote net.Addr, p Protocol) *fakeConn {
	c := &fakeConn{fs: fs, poison: true, remote: remote}
	c.sess = fs.hub.Open(c, p, c.peer())
	fs.conns = append(fs.conns, c)
	return c
}

// traffic feeds in to c, runs Input as a loop would, then pumps; it
// returns what c was sent meanwhile.
func (fs *fakeServer) traffic(c *fakeConn, in string) string {
	fs.t.Helper()
	mark := len(c.out)
	c.feed([]byte(in))
	fs.input(c)
	fs.pump()
	return string(c.out[mark:])
}

// input runs one Input on what c has buffered.
func (fs *fakeServer) input(c *fakeConn) {
	if c.closed || c.readPaused && len(c.in) == 0 {
		return
	}
	n, closeConn := c.sess.Input(c.in)
	c.in = c.in[n:]
	if closeConn {
		fs.closeConn(c)
	}
}

func (fs *fakeServer) closeConn(c *fakeConn) {
	if c.closed {
		return
	}
	c.closed = true
	c.sess.Closed()
}

// pump runs the queued work until none is left: posted results, Input
// for woken conns, Closed for closed ones.
func (fs *fakeServer) pump() {
	for {
		busy := false
		for _, c := range fs.conns {
			c.mu.Lock()
			posted := c.posted
			c.posted = nil
			c.mu.Unlock()
			batched := false
			for _, r := range posted {
				busy = true
				if c.sess.Deliver(r) {
					batched = true
				}
			}
			if batched {
				c.sess.FlushPushes()
			}
		}
		woken, closing := fs.woken, fs.closing
		fs.woken, fs.closing = nil, nil
		for _, c := range closing {
			busy = true
			fs.closeConn(c)
		}
		for _, c := range woken {
			busy = true
			fs.input(c)
		}
		if !busy {
			return
		}
	}
}

// runTimers moves the clock by d, fires the engine's due timers and the
// sessions' timers due by then, and pumps.
func (fs *fakeServer) runTimers(d time.Duration) {
	fs.clock.Add(timerwheel.Tick(d.Milliseconds()))
	fs.fire()
}

// fire runs what is due at the clock's time.
func (fs *fakeServer) fire() {
	var fx engine.Effects
	fs.eng.Advance(fs.clock.Now(), &fx)
	fs.hub.Route(&fx)
	now := fs.clock.Now()
	for _, c := range fs.conns {
		if c.timerArmed && now.Passed(c.timerAt) && !c.closed {
			c.timerArmed = false
			c.sess.Timer()
		}
	}
	fs.pump()
}

// run applies a command for a session of the test's own (as from another
// loop) and routes its effects.
func (fs *fakeServer) run(c engine.Command) engine.Result {
	var fx engine.Effects
	c.At = fs.clock.Now()
	r := fs.eng.Apply(&c, &fx)
	fs.hub.Route(&fx)
	return r
}

// request is one frame in wire form.
func request(cmd, key, arg string) string { return cmd + "\n" + key + "\n" + arg + "\n" }

// A script whose replies do not depend on timing; tokens are predictable
// because fences count from 1 and the token key is fixed.
var splitScript = []struct{ req, reply string }{
	{request("l", "a", "0 10"), "ok " + tokenFor(1) + " 10\n"},
	{request("r", "a", tokenFor(1)), "ok\n"},
	{request("l", "a", "0 10"), "ok " + tokenFor(2) + " 10\n"},
	{request("l", "a", "0"), "timeout\n"},
	{request("n", "a", tokenFor(2)+" 7"), "ok 7\n"},
	{request("sl", "s", "0 2 5"), "ok " + tokenFor(3) + " 5\n"},
	{request("sl", "s", "0 3"), "error_limit_mismatch\n"},
	{request("e", "b", "9"), "acquired " + tokenFor(4) + " 9\n"},
	{request("e", "b", ""), "error_already_enqueued\n"},
	{request("w", "b", "0"), "ok " + tokenFor(4) + " 9\n"},
	{request("w", "c", "1"), "error_not_enqueued\n"},
	{request("bogus", "x", "y"), "error\n"},
	{"l\r\na\r\n0 10\r\n", "timeout\n"}, // CRLF clients
	{request("ping", "", ""), "ok\n"},
	{request("l", "", "0"), "error\n"},
	{request("l", "a b", "0"), "error\n"},
	{request("r", "a", tokenFor(2)), "ok\n"},
	{request("sr", "s", tokenFor(3)), "ok\n"},
	{request("r", "b", tokenFor(4)), "ok\n"},
	{request("barrier", "_", "_"), "ok\n"},
	{request("r", "b", tokenFor(4)), "error\n"},
}

func scriptBytes() (in, want string) {
	var a, b strings.Builder
	for _, s := range splitScript {
		a.WriteString(s.req)
		b.WriteString(s.reply)
	}
	return a.String(), b.String()
}

// runSplit feeds the script in the given chunk sizes, one OnTraffic per
// chunk, on a fresh server.
func runSplit(t *testing.T, in string, chunks []int) string {
	t.Helper()
	fs := newFakeServer(t, Config{}, engine.Config{})
	c := fs.open()
	var got strings.Builder
	for _, n := range chunks {
		got.WriteString(fs.traffic(c, in[:n]))
		in = in[n:]
	}
	if in != "" {
		t.Fatalf("chunks left %d bytes", len(in))
	}
	if c.closed {
		t.Fatalf("connection closed")
	}
	if c.InboundBuffered() != 0 {
		t.Fatalf("%d bytes left buffered", c.InboundBuffered())
	}
	return got.String()
}

func TestSessionPipelinedScript(t *testing.T) {
	in, want := scriptBytes()
	if got := runSplit(t, in, []int{len(in)}); got != want {
		t.Fatalf("one buffer:\ngot  %q\nwant %q", got, want)
	}
}

func TestSessionByteAtATime(t *testing.T) {
	in, want := scriptBytes()
	ones := make([]int, len(in))
	for i := range ones {
		ones[i] = 1
	}
	if got := runSplit(t, in, ones); got != want {
		t.Fatalf("byte at a time:\ngot  %q\nwant %q", got, want)
	}
}

func TestSessionRandomSplits(t *testing.T) {
	in, want := scriptBytes()
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var chunks []int
		for left := len(in); left > 0; {
			n := min(left, 1+rng.IntN(40))
			chunks = append(chunks, n)
			left -= n
		}
		if got := runSplit(t, in, chunks); got != want {
			t.Fatalf("seed %d, chunks %v:\ngot  %q\nwant %q", seed, chunks, got, want)
		}
	}
}

func TestSessionLineTooLong(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	c := fs.open()
	// Frames before the long line are answered; nothing after it is.
	if got := fs.traffic(c, request("ping", "_", "_")+"l\n"+strings.Repeat("x", 300)); got != "ok\n" {
		t.Fatalf("before the LF: %q", got)
	}
	if c.closed || c.InboundBuffered() != 0 {
		t.Fatalf("closed=%v buffered=%d: the long line must be drained, not kept", c.closed, c.InboundBuffered())
	}
	if got := fs.traffic(c, strings.Repeat("y", 1000)); got != "" || c.closed {
		t.Fatalf("still inside the long line: %q closed=%v", got, c.closed)
	}
	if got := fs.traffic(c, "yy\n"+request("ping", "_", "_")); got != "error\n" {
		t.Fatalf("at the LF: %q", got)
	}
	if !c.closed {
		t.Fatalf("connection not closed after an over-long line")
	}

	// The whole long line in one read.
	c = fs.open()
	if got := fs.traffic(c, strings.Repeat("l", 300)+"\n"+request("ping", "_", "_")); got != "error\n" || !c.closed {
		t.Fatalf("long command line: %q closed=%v", got, c.closed)
	}
}

// blockedConn returns a conn parked in l on key behind holder.
func blockedConn(t *testing.T, fs *fakeServer, key, tail string) (holderConn, waiter *fakeConn, tok string) {
	t.Helper()
	holderConn, waiter = fs.open(), fs.open()
	got := fs.traffic(holderConn, request("l", key, "0 10"))
	if !strings.HasPrefix(got, "ok ") {
		t.Fatalf("holder: %q", got)
	}
	tok = strings.Fields(got)[1]
	if got := fs.traffic(waiter, request("l", key, "5 8")+tail); got != "" {
		t.Fatalf("parked request answered at once: %q", got)
	}
	return holderConn, waiter, tok
}

func TestSessionPipelineBehindParkedRequest(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	tail := request("l", "b", "0 6") + request("ping", "_", "_")
	holder, c, tok := blockedConn(t, fs, "a", tail)
	if c.InboundBuffered() != len(tail) {
		t.Fatalf("%d bytes buffered behind the parked request, want %d", c.InboundBuffered(), len(tail))
	}
	// More input while parked is kept, not parsed.
	if got := fs.traffic(c, request("ping", "_", "_")); got != "" {
		t.Fatalf("answered while parked: %q", got)
	}
	// The release on another conn delivers the grant; the wake-up then
	// runs the pipelined tail, in order.
	if got := fs.traffic(holder, request("r", "a", tok)); got != "ok\n" {
		t.Fatalf("release: %q", got)
	}
	want := "ok " + tokenFor(2) + " 8\nok " + tokenFor(3) + " 6\nok\nok\n"
	if got := string(c.out); got != want {
		t.Fatalf("after the hand-off:\ngot  %q\nwant %q", got, want)
	}
	if c.wakes != 1 || c.InboundBuffered() != 0 {
		t.Fatalf("wakes=%d buffered=%d", c.wakes, c.InboundBuffered())
	}
}

func TestSessionTimeoutDeliveryResumes(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	_, c, _ := blockedConn(t, fs, "a", request("ping", "_", "_"))
	fs.runTimers(4999 * time.Millisecond)
	if len(c.out) != 0 {
		t.Fatalf("answered before the timeout: %q", c.out)
	}
	fs.runTimers(time.Millisecond)
	if got := string(c.out); got != "timeout\nok\n" {
		t.Fatalf("got %q", got)
	}
	// Delivered and resumed: the conn parses again.
	if got := fs.traffic(c, request("ping", "_", "_")); got != "ok\n" {
		t.Fatalf("after resuming: %q", got)
	}
}

func TestSessionNoWakeWithoutPipelinedInput(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	holder, c, tok := blockedConn(t, fs, "a", "")
	fs.traffic(holder, request("r", "a", tok))
	if got := string(c.out); got != "ok "+tokenFor(2)+" 8\n" || c.wakes != 0 {
		t.Fatalf("got %q wakes=%d", got, c.wakes)
	}
}

// dflockd closes a parked connection once pipelined bytes fill its 4 KiB
// read buffer; fewer are kept and served later (spec §A.6).
func TestSessionBlockedInputCap(t *testing.T) {
	filler := func(n int) string { return strings.Repeat("p", n) } // one unfinished line

	t.Run("below", func(t *testing.T) {
		fs := newFakeServer(t, Config{}, engine.Config{})
		_, c, _ := blockedConn(t, fs, "a", "")
		fs.traffic(c, filler(maxBlockedInput-1))
		if c.closed {
			t.Fatalf("closed with %d bytes pipelined", maxBlockedInput-1)
		}
	})
	t.Run("at", func(t *testing.T) {
		fs := newFakeServer(t, Config{}, engine.Config{})
		_, c, _ := blockedConn(t, fs, "a", "")
		fs.traffic(c, filler(maxBlockedInput-1))
		fs.traffic(c, filler(1))
		if !c.closed {
			t.Fatalf("still open with %d bytes pipelined", maxBlockedInput)
		}
	})
	t.Run("same-read", func(t *testing.T) {
		// The parked request and over 4 KiB behind it in one read.
		fs := newFakeServer(t, Config{}, engine.Config{})
		_, c, _ := blockedConn(t, fs, "a", strings.Repeat(request("ping", "_", "_"), 1000))
		if !c.closed {
			t.Fatalf("still open with %d bytes pipelined", c.InboundBuffered())
		}
	})
	t.Run("waiter-leaves", func(t *testing.T) {
		// Closing the parked conn removes its waiter: the release that
		// follows frees the key instead of granting a dead conn.
		fs := newFakeServer(t, Config{}, engine.Config{})
		holder, c, tok := blockedConn(t, fs, "a", "")
		fs.traffic(c, filler(2*maxBlockedInput))
		if !c.closed {
			t.Fatalf("still open")
		}
		fs.traffic(holder, request("r", "a", tok))
		if got := fs.traffic(fs.open(), request("l", "a", "0 5")); !strings.HasPrefix(got, "ok ") {
			t.Fatalf("key not free after the parked conn closed: %q", got)
		}
	})
}

func TestSessionDeliveryToClosedConnDropped(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	_, c, tok := blockedConn(t, fs, "a", "")
	// The release comes from off the loop (as from another loop or the
	// timer driver), so the grant is queued for c's loop as a task; c
	// closes before that task runs.
	rel := vocab.Request{Op: vocab.OpRelease, Key: []byte("a"), Token: []byte(tok)}
	other := fs.run(engine.Command{Kind: engine.KindOpen}).Session
	if r := fs.run(engine.Command{Session: other, Req: rel}); r.Status != vocab.StatusOK {
		t.Fatalf("release: %+v", r)
	}
	fs.closeConn(c)
	fs.pump()
	if len(c.out) != 0 {
		t.Fatalf("closed conn was written: %q", c.out)
	}
	// Its cleanup released the grant it never saw.
	if got := fs.traffic(fs.open(), request("l", "a", "0 5")); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("key still held by a closed conn: %q", got)
	}
}

func TestSessionReadTimeout(t *testing.T) {
	fs := newFakeServer(t, Config{ReadTimeout: 3 * time.Second}, engine.Config{})
	c := fs.open()
	fs.traffic(c, "l\n") // the deadline is per line: this one ends at 1000+3000
	fs.runTimers(2999 * time.Millisecond)
	if c.closed {
		t.Fatalf("closed before the read timeout")
	}
	fs.runTimers(time.Millisecond)
	if got := string(c.out); got != "error\n" || !c.closed {
		t.Fatalf("got %q closed=%v; want error and close", got, c.closed)
	}
}

// A line that starts late in a millisecond still gets the whole read
// timeout: a deadline taken from the truncated clock would end up to 1 ms
// early and drop the connection (and its holds) before its time.
func TestSessionReadTimeoutNotEarly(t *testing.T) {
	fs := newFakeServer(t, Config{ReadTimeout: 3 * time.Second}, engine.Config{})
	c := fs.open()
	start := timerwheel.Of(1000) + timerwheel.Instant(time.Millisecond) - 1
	fs.clock.SetInstant(start)
	fs.traffic(c, "l\n")
	fs.clock.SetInstant(start + timerwheel.Instant(3*time.Second) - 1)
	fs.fire()
	if c.closed {
		t.Fatalf("closed 1 ns before the read timeout ended")
	}
	fs.clock.SetInstant(timerwheel.Of(4002))
	fs.fire()
	if got := string(c.out); got != "error\n" || !c.closed {
		t.Fatalf("got %q closed=%v; want error and close", got, c.closed)
	}
}

// A read whose replies exceed the per-read budget yields the loop with a
// Wake and continues where it stopped: nothing lost, order kept.
func TestSessionReplyBudgetResumes(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	c := fs.open()
	const n = 3 * replyBudget / len("ok\n")
	got := fs.traffic(c, strings.Repeat(request("ping", "_", "_"), n))
	if got != strings.Repeat("ok\n", n) {
		t.Fatalf("%d bytes of replies, want %d", len(got), 3*n)
	}
	if c.wakes < 2 || c.InboundBuffered() != 0 {
		t.Fatalf("wakes=%d buffered=%d", c.wakes, c.InboundBuffered())
	}
}

func (c *fakeConn) HalfOpen() bool { return false }

// peer is what the session opens with: the fake's address, and not
// half-open, as gnet's loops on a single node.
func (c *fakeConn) peer() Peer { return Peer{Addr: c.RemoteAddr(), HalfOpen: c.HalfOpen()} }
