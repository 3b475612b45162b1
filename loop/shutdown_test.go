package loop

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// A Shutdown that comes before the loops run (a SIGTERM during startup)
// still ends Serve, with no error, and leaves no listener open.
func TestShutdownBeforeServe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Listeners: []net.Listener{l}, Loops: 1, Engine: engine.Config{}}, timerwheel.NewMonoClock())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown before Serve: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after an early Shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve still running after an early Shutdown")
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), 5*time.Second); err == nil {
		c.Close()
		t.Fatal("the listener still accepts after Serve returned")
	}
}

// Serve reports the end of the loops as a fault unless Shutdown asked for
// it: gnet stopped behind the server's back must not look like a drain.
func TestLoopsStoppedWithoutShutdownIsAnError(t *testing.T) {
	srv, done := startServing(t, Config{Addr: "tcp://127.0.0.1:0", Loops: 1})
	srv.mu.Lock()
	e := srv.mu.gnet
	srv.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = e.Stop(ctx) // as a fault inside gnet would end it
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Serve returned nil after its loops stopped without a Shutdown")
		}
		t.Logf("Serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("Serve still running after its loops stopped")
	}
}

// A listener its owner closes (a cluster member's relay closes the client
// listener it shares with the loops as the member drains, alongside the
// loops' own Shutdown) ends accepting; it is not a fault. Before, Serve
// returned "loop: accept on …: use of closed network connection" and a
// SIGTERMed member exited 1.
func TestListenerClosedByItsOwnerIsNotAFault(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, done := startServing(t, Config{Listeners: []net.Listener{l}, Loops: 1})
	_ = l.Close()    // its owner's close, before the server's Shutdown
	srv.ln.wg.Wait() // the accept goroutine has seen it
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after its listener was closed by its owner, then Shutdown: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve still running after Shutdown")
	}
}

// startServing runs Serve of a server made from cfg (its Ready set here)
// and waits until the server is ready; Serve's error comes on done. A
// Serve that ends first, or a server not ready in 30 s, fails the test.
func startServing(t *testing.T, cfg Config) (srv *Server, done <-chan error) {
	t.Helper()
	ready := make(chan struct{})
	cfg.Ready = ready
	srv = New(cfg, timerwheel.NewMonoClock())
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	select {
	case <-ready:
	case err := <-served:
		t.Fatalf("Serve: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	return srv, served
}
