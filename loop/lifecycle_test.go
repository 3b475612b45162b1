package loop

import (
	"context"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
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
