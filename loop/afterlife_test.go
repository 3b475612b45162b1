//go:build linux

package loop

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// heldReplica is a leader's replica that keeps every request until the
// test answers it, and records the sessions it was asked to close.
type heldReplica struct {
	acceptAll
	mu     sync.Mutex
	subs   []uint32 // the connection of each request, in order
	closes []uint32
}

func (r *heldReplica) Submit(conn uint32, _ *vocab.Request) error {
	r.mu.Lock()
	r.subs = append(r.subs, conn)
	r.mu.Unlock()
	return nil
}

func (r *heldReplica) Close(conn uint32) {
	r.mu.Lock()
	r.closes = append(r.closes, conn)
	r.mu.Unlock()
}

func (r *heldReplica) SetTenant(uint32, string, int64, int64, int64) error { return nil }

func (r *heldReplica) counts() (subs, closes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.subs), len(r.closes)
}

// memberServer serves a cluster member's hub over the loops, with rep as
// its replica.
func memberServer(t *testing.T, rep session.Replica) (*testServer, *session.Hub) {
	t.Helper()
	hub := session.NewClusterHub(session.Config{ReadTimeout: time.Minute}, rep, timerwheel.NewMonoClock())
	ts, err := startServer(Config{Hub: hub, ReadTimeout: time.Minute}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.stop)
	return ts, hub
}

// onLoop runs f on cs's loop and waits for it: what f reads of the
// connection is what the loop had done before.
func onLoop(t *testing.T, cs *conn, f func()) {
	t.Helper()
	done := make(chan struct{})
	task := func(context.Context) error { f(); close(done); return nil }
	if err := cs.lp.el.Execute(context.Background(), gnet.RunnableFunc(task)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(replyWithin):
		t.Fatal("the loop did not run the task")
	}
}

// TestOwedConnectionIsReadOn: a member's connection owed an answer stays
// registered for reading (no epoll_ctl per request, afterlife.go).
func TestOwedConnectionIsReadOn(t *testing.T) {
	rep := &heldReplica{}
	ts, hub := memberServer(t, rep)
	c := dial(t, ts)
	c.send("incr", "h", "1")
	waitFor(t, func() bool { s, _ := rep.counts(); return s == 1 })
	cs := serverConn(t, ts.srv, c.c.LocalAddr().String())
	onLoop(t, cs, func() {}) // the loop is done with the request
	fd := cs.c.Fd()
	epfd, err := findEpoll(fd, ts.srv.watch.fd())
	if err != nil {
		t.Fatal(err)
	}
	if m := epollMask(t, epfd, fd); m&unix.EPOLLIN == 0 {
		t.Fatalf("owed an answer, the socket's epoll events are %#x: reading was paused", m)
	}
	hub.Deliver(rep.subs[0], true, engine.Result{Kind: engine.KindInt, Int: 1}, &engine.Effects{})
	c.expect("ok 1")
}

// TestHalfClosedClientGetsOwedAnswers: `nc -N` against a member. The
// EOF is read while the three answers are owed; the session closes
// behind its requests, the answers still reach the client, in order, and
// only then does the connection close and its cleanup run.
func TestHalfClosedClientGetsOwedAnswers(t *testing.T) {
	rep := &heldReplica{}
	ts, hub := memberServer(t, rep)
	c := dial(t, ts)
	c.raw("incr\nh\n1\nincr\nh\n1\nincr\nh\n1\n")
	waitFor(t, func() bool { s, _ := rep.counts(); return s == 3 })
	cs := serverConn(t, ts.srv, c.c.LocalAddr().String())
	if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// The session's close is proposed behind its requests.
	waitFor(t, func() bool { _, cl := rep.counts(); return cl == 1 })
	var after bool
	onLoop(t, cs, func() { after = cs.after != nil })
	if !after {
		t.Fatal("the EOF was not read while answers were owed (no afterlife)")
	}
	if n := ts.srv.Connections(); n != 1 {
		t.Fatalf("%d connections while answers are owed, want 1", n)
	}
	for i, conn := range rep.subs {
		hub.Deliver(conn, true, engine.Result{Kind: engine.KindInt, Int: int64(i + 1)}, &engine.Effects{})
	}
	_ = c.c.SetReadDeadline(time.Now().Add(replyWithin))
	all, err := io.ReadAll(c.c)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(all), "ok 1\nok 2\nok 3\n"; got != want {
		t.Fatalf("the half-closed client read %q, want %q and the close", got, want)
	}
	waitFor(t, func() bool { return ts.srv.Connections() == 0 })
}

// TestAfterlifeEndsWithTheServer: a server that stops while a
// connection's answers are still owed closes its socket.
func TestAfterlifeEndsWithTheServer(t *testing.T) {
	rep := &heldReplica{}
	hub := session.NewClusterHub(session.Config{ReadTimeout: time.Minute}, rep, timerwheel.NewMonoClock())
	ts, err := startServer(Config{Hub: hub, ReadTimeout: time.Minute}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts)
	c.send("incr", "h", "1")
	waitFor(t, func() bool { s, _ := rep.counts(); return s == 1 })
	if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { _, cl := rep.counts(); return cl == 1 })
	// Shutdown waits for the connection (its answer is owed) until its
	// context ends, then stops the loops; Serve returns once the
	// afterlife is closed.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = ts.srv.Shutdown(ctx)
	select {
	case <-ts.done:
	case <-time.After(replyWithin):
		t.Fatal("Serve did not return")
	}
	_ = c.c.SetReadDeadline(time.Now().Add(replyWithin))
	if b, err := io.ReadAll(c.c); err != nil || len(b) != 0 {
		t.Fatalf("after the server stopped: read %q, %v; want the close", b, err)
	}
}
