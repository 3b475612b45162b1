package loop

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/vocab"
)

func TestMaxConnectionsClosesSilently(t *testing.T) {
	ts, err := startServer(Config{MaxConnections: 2}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	a, b := dial(t, ts), dial(t, ts)
	a.do("ping", "_", "_", "ok")
	b.do("ping", "_", "_", "ok")
	c := dial(t, ts)
	c.send("ping", "_", "_")
	c.closed() // no status line, just a close (spec §D.1)
	a.c.Close()
	waitFor(t, func() bool { return ts.srv.Connections() == 1 })
	dial(t, ts).do("ping", "_", "_", "ok")
}

func TestGracefulShutdown(t *testing.T) {
	ts, err := startServer(Config{ShutdownTimeout: 5 * time.Second}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	holder, waiter, idle := dial(t, ts), dial(t, ts), dial(t, ts)
	k := key("drain")
	holder.do("l", k, "0 30", "ok T 30")
	waiter.send("l", k, "20")
	waitFor(t, func() bool { return waitersOnServer(t, ts, k) == 1 })
	// idle must have been taken from the listen backlog (a ping answered
	// proves it), else the drain's close of the listener refuses it: a CI
	// run's idle got EOF where error_draining was due.
	idle.do("ping", "_", "_", "ok")

	stopped := make(chan error, 1)
	go func() { stopped <- ts.srv.Shutdown(context.Background()) }()

	waiter.expect("error") // a parked acquire is cancelled (spec §D.5)
	idle.do("ping", "_", "_", "error_draining")
	idle.closed()
	holder.do("ping", "_", "_", "error_draining")
	holder.closed()
	waiter.do("ping", "_", "_", "error_draining")
	waiter.closed()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not finish after every connection closed")
	}
	<-ts.done
}

// waitersOnServer reports the waiters count of lock k (0 if not listed).
func waitersOnServer(t *testing.T, ts *testServer, k string) int {
	for _, l := range stats(t, ts)["locks"].([]any) {
		m := l.(map[string]any)
		if m["key"] == k {
			return int(m["waiters"].(float64))
		}
	}
	return 0
}

// A drain closes the listener: a new client is refused by the kernel at
// once, while an open connection keeps being served (v1 serves it
// normally through a drain), and the server stops when it leaves. The
// per-IP cap closes a client's extra connections silently.
func TestDrainClosesListenerAndPerIPCap(t *testing.T) {
	ts, err := startServer(Config{ShutdownTimeout: 10 * time.Second, Profile: vocab.ProfileV1,
		Limiter: &conncap.Limiter{PerIP: 2}}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := dial(t, ts), dial(t, ts)
	k := key("drain-v1")
	tok := a.do("l", k, "0 30", "ok T 30")[1]
	b.do("stats", "_", "_", "ok *")
	extra := dial(t, ts)
	extra.send("stats", "_", "_")
	extra.closed() // third connection from 127.0.0.1: silent close (spec §D.1)

	stopped := make(chan error, 1)
	go func() { stopped <- ts.srv.Shutdown(context.Background()) }()
	waitFor(t, ts.srv.Hub().Draining)
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", ts.addr, time.Second)
		if err != nil {
			return errors.Is(err, syscall.ECONNREFUSED)
		}
		c.Close() // accepted before the listener closed
		return false
	})
	a.do("n", k, tok+" 40", "ok 40") // v1 goes on serving open connections
	a.do("r", k, tok, "ok")
	a.c.Close()
	b.c.Close()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not finish after every connection closed")
	}
	<-ts.done
}
