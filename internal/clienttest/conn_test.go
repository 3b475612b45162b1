package clienttest

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// TestPipelinedRepliesMatchRequests hammers one Conn from several
// goroutines: every incr must get its own new value, so the values seen
// are exactly 1..N. A reply handed to the wrong request would repeat or
// skip a value.
func TestPipelinedRepliesMatchRequests(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	const workers, each = 8, 200
	var mu sync.Mutex
	var seen []int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				v, err := client.Incr(c, "n", 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen = append(seen, v)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(seen)
	for i, v := range seen {
		if v != int64(i+1) {
			t.Fatalf("values seen: %d at position %d of %d", v, i, len(seen))
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d replies, want %d", len(seen), workers*each)
	}
}

func TestWithContextCancelsABlockedRequest(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	holder, c, probe := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	_, _, err := client.Acquire(holder, "k", 0)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	if c.WithContext(ctx).Context() != ctx || c.Context() != context.Background() {
		t.Fatal("WithContext does not bind the context to the copy only")
	}
	got := make(chan error, 1)
	go func() { _, _, err := client.Acquire(c.WithContext(ctx), "k", time.Minute); got <- err }()
	eventually(t, "the waiter to queue", func() bool { return statsField(t, probe, "locks", "k", "waiters") == 1 })
	cancel()
	wantErr(t, receive(t, got, "cancelled Acquire"), context.Canceled, "cancelled Acquire")
	// The connection is given up, which withdraws the waiter on the server.
	<-c.Done()
	wantErr(t, c.Err(), client.ErrClosed, "Err after the cancellation")
	wantErr(t, client.Ping(c), client.ErrClosed, "Ping on the closed connection")
	eventually(t, "the waiter to leave", func() bool { return statsField(t, probe, "locks", "k", "waiters") == 0 })

	// A deadline works the same way, here on a blocking pop: a pop that
	// ignored it would end with its own minute, and no DeadlineExceeded.
	c2 := dial(t, srv.Addr())
	_, err = client.BLPop(c2.WithContext(ctxTimeout(t, 300*time.Millisecond)), "empty", time.Minute)
	wantErr(t, err, context.DeadlineExceeded, "BLPop past its context's deadline")
}

func TestReplyTimeoutGivesUpASilentServer(t *testing.T) {
	t.Parallel()
	silent := testserver.StartFake(t, nil, func(string, string, string) string {
		<-t.Context().Done() // answers only when the test is over
		return "ok"
	})
	d := client.Dialer{ReplyTimeout: 200 * time.Millisecond}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), silent.Addr())
	must(t, err)
	defer c.Close()
	// The fake answers only when the test is over, so the Ping can only
	// end by the reply timeout: never before it (how long after depends
	// on the machine's load), and within a generous bound.
	start := time.Now()
	pinged := make(chan error, 1)
	go func() { pinged <- client.Ping(c) }()
	wantErr(t, receiveWithin(t, pinged, 30*time.Second, "Ping to a silent server"), client.ErrClosed, "Ping to a silent server")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before the %v reply timeout", d, 200*time.Millisecond)
	}
}

// receiveWithin is receive with a bound of its own.
func receiveWithin[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing after %v", what, d)
		panic("unreachable")
	}
}

// TestKeepAlive: the server drops a connection silent for its read timeout
// (3 s here); pings every 300 ms keep a subscriber alive past it, with
// 2.7 s to spare for a stalled machine between two pings.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	const readTimeout = 3 * time.Second
	srv := testserver.Start(t, "--read-timeout", strconv.Itoa(int(readTimeout/time.Second)))
	pinged := client.Dialer{KeepAlive: 300 * time.Millisecond}
	silent := client.Dialer{KeepAlive: -1}
	ctx := ctxTimeout(t, 10*time.Second)
	kc, err := pinged.Dial(ctx, srv.Addr())
	must(t, err)
	defer kc.Close()
	sc, err := silent.Dial(ctx, srv.Addr())
	must(t, err)
	defer sc.Close()
	sub := client.NewSignalConn(kc)
	must(t, sub.Listen("news"))
	must(t, client.Ping(sc)) // both have completed a request

	select {
	case <-sc.Done(): // the control: dropped for silence
	case <-time.After(30 * time.Second): // generous: the read timeout is 3 s
		t.Fatal("the server did not drop the silent connection")
	}
	time.Sleep(readTimeout) // one more read timeout for the pinged one
	if err := kc.Err(); err != nil {
		t.Fatalf("the pinged connection ended: %v", err)
	}
	if n, err := client.Emit(dial(t, srv.Addr()), "news", "still here"); err != nil || n != 1 {
		t.Fatalf("Emit = %d, %v; want the kept-alive subscriber", n, err)
	}
	if s := receive(t, sub.Signals(), "signal"); s.Payload != "still here" {
		t.Fatalf("got %+v", s)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--auth-token", "s3cret")
	ctx := ctxTimeout(t, 10*time.Second)
	good := client.Dialer{AuthToken: "s3cret"}
	c, err := good.Dial(ctx, srv.Addr())
	must(t, err)
	defer c.Close()
	must(t, client.Ping(c))
	bad := client.Dialer{AuthToken: "wrong"}
	_, err = bad.Dial(ctx, srv.Addr())
	wantErr(t, err, client.ErrAuth, "Dial with a wrong token")

	// dflockd's way: Dial, then Authenticate.
	c2 := dial(t, srv.Addr())
	must(t, client.Authenticate(c2, "s3cret"))
	must(t, client.Ping(c2))
	c3 := dial(t, srv.Addr())
	wantErr(t, client.Authenticate(c3, "wrong"), client.ErrAuth, "Authenticate with a wrong token")
	<-c3.Done() // the server hangs up
	c4 := dial(t, srv.Addr())
	wantErr(t, client.Ping(c4), client.ErrAuth, "Ping without auth")

	l := &client.Lock{Key: "k", Servers: []string{srv.Addr()}, AuthToken: "s3cret"}
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Lock with AuthToken = %v, %v", ok, err)
	}
	must(t, l.Release(ctx))
	l.AuthToken = ""
	_, err = l.Acquire(ctx)
	wantErr(t, err, client.ErrAuth, "Lock without a token")

	// A server without auth: Authenticate says ErrAuth, as dflockd's
	// client does, but a Dialer's token is accepted (the server serves
	// everyone).
	open := testserver.Start(t)
	wantErr(t, client.Authenticate(dial(t, open.Addr()), "s3cret"), client.ErrAuth, "Authenticate on a server without auth")
	c5, err := good.Dial(ctx, open.Addr())
	must(t, err)
	defer c5.Close()
	must(t, client.Ping(c5))
}

func TestDoStatsPing(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	if r, err := c.Do("incr", "x", "5"); err != nil || r != "ok 5" {
		t.Fatalf("Do incr = %q, %v", r, err)
	}
	if r, err := c.Do("bogus", "k", "_"); err != nil || r != "error" {
		t.Fatalf("Do of an unknown command = %q, %v; want the server's error reply", r, err)
	}
	must(t, client.Ping(c))
	doc, err := client.Stats(c)
	if err != nil || !strings.HasPrefix(doc, `{"connections":1,`) {
		t.Fatalf("Stats = %.80q, %v", doc, err)
	}
	if c.Addr() != srv.Addr() {
		t.Fatalf("Addr = %s, want %s", c.Addr(), srv.Addr())
	}
	// Dial fails cleanly on a port nobody listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := client.Dial(addr); err == nil {
		t.Fatal("Dial of a closed port succeeded")
	}
}

func TestClientSharesAndRedials(t *testing.T) {
	t.Parallel()
	a, b := testserver.Start(t), testserver.Start(t)
	cl := &client.Client{Servers: []string{a.Addr(), b.Addr()}}
	defer cl.Close()
	ctx := ctxTimeout(t, 10*time.Second)
	keys := map[int]string{}
	for i := 0; len(keys) < 2; i++ {
		k := "key" + string(rune('a'+i))
		keys[client.CRC32Shard(k, 2)] = k
	}
	for shard, k := range keys {
		c, err := cl.Conn(ctx, k)
		must(t, err)
		if want := []string{a.Addr(), b.Addr()}[shard]; c.Addr() != want {
			t.Fatalf("key %s on %s, want shard %d %s", k, c.Addr(), shard, want)
		}
		for range 3 {
			c, err := cl.Conn(ctx, k)
			must(t, err)
			client.Incr(c, k, 1)
		}
		// One shared connection per server.
		if n := statsNumber(t, c, "connections"); n != 1 {
			t.Fatalf("server of %s has %d connections, want 1", k, n)
		}
	}
	c, _ := cl.Conn(ctx, keys[0])
	c.Close()
	c2, err := cl.Conn(ctx, keys[0])
	must(t, err)
	if v, err := client.GetCounter(c2, keys[0]); err != nil || v != 3 {
		t.Fatalf("after a redial: %d, %v", v, err)
	}
	d, err := cl.Dial(ctx, keys[0])
	must(t, err)
	defer d.Close()
	if n := statsNumber(t, d, "connections"); n != 2 {
		t.Fatalf("Dial added no connection of its own: %d", n)
	}
	must(t, cl.Close())
	if _, err := cl.Conn(ctx, keys[0]); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Conn after Close = %v", err)
	}
}

// statsNumber returns a top-level number of the stats document.
func statsNumber(t *testing.T, c *client.Conn, field string) int {
	t.Helper()
	doc, err := client.Stats(c)
	must(t, err)
	_, rest, ok := strings.Cut(doc, `"`+field+`":`)
	if !ok {
		t.Fatalf("no %s in %s", field, doc)
	}
	n := 0
	for _, r := range rest {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// TestDraining: a server shutting down refuses new requests with
// error_draining, which is ErrDraining and, for callers that only know
// dflockd's errors, ErrServer.
func TestDraining(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--shutdown-timeout", "5")
	c, holder := dial(t, srv.Addr()), dial(t, srv.Addr())
	// A held lock keeps the server draining instead of exiting at once.
	_, _, err := client.Acquire(holder, "k", 0)
	must(t, err)
	must(t, client.Ping(c))
	srv.Terminate()
	var last error
	eventually(t, "the drain to start", func() bool {
		_, last = client.Incr(c, "n", 1)
		return last != nil
	})
	if !errors.Is(last, client.ErrDraining) || !errors.Is(last, client.ErrServer) {
		t.Fatalf("request while draining = %v, want ErrDraining matching ErrServer", last)
	}
}

// TestCustomShardFunc: the high-level types place a key with ShardFunc.
func TestCustomShardFunc(t *testing.T) {
	t.Parallel()
	a, b := testserver.Start(t), testserver.Start(t)
	last := func(_ string, n int) int { return n - 1 }
	l := &client.Lock{Key: "k", Servers: []string{a.Addr(), b.Addr()}, ShardFunc: last}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Release(context.Background())
	_, _, err := client.Acquire(dial(t, b.Addr()), "k", 0)
	wantErr(t, err, client.ErrTimeout, "Acquire on the server ShardFunc picked")
	if _, _, err := client.Acquire(dial(t, a.Addr()), "k", 0); err != nil {
		t.Fatalf("the other server has the lock too: %v", err)
	}
	cl := &client.Client{Servers: []string{a.Addr(), b.Addr()}, ShardFunc: last}
	defer cl.Close()
	c, err := cl.Conn(ctxTimeout(t, 10*time.Second), "anything")
	must(t, err)
	if c.Addr() != b.Addr() {
		t.Fatalf("Client put the key on %s, want %s", c.Addr(), b.Addr())
	}
}

func TestFenceFromToken(t *testing.T) {
	t.Parallel()
	if f, err := client.FenceFromToken("00000000000000ff0123456789abcdef"); err != nil || f != 255 {
		t.Fatalf("FenceFromToken = %d, %v", f, err)
	}
	for _, bad := range []string{"", "00ff", "zz000000000000ff0123456789abcdef", "00000000000000ff0123456789abcdeX"} {
		if _, err := client.FenceFromToken(bad); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("FenceFromToken(%q) = %v", bad, err)
		}
	}
}
