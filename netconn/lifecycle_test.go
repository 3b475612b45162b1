package netconn

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// An idle connection is answered error and closed once the read timeout
// passes (spec §A.4), not before.
func TestReadTimeoutClosesIdle(t *testing.T) {
	h := start(t, options{sess: session.Config{ReadTimeout: 10 * time.Second}})
	c := h.dial(t)
	c.send("ping", "_", "_")
	c.expect("ok")
	h.tick(9999 * time.Millisecond)
	c.send("ping", "_", "_") // a request restarts the deadline
	c.expect("ok")
	h.tick(9999 * time.Millisecond)
	if n := h.srv.Connections(); n != 1 {
		t.Fatalf("%d connections before the read timeout, want 1", n)
	}
	h.tick(2 * time.Millisecond)
	c.expect("error")
	c.closed()
	waitFor(t, "the connection to end", func() bool { return h.srv.Connections() == 0 && h.hub.Connections() == 0 })
}

// Closing a connection that holds a lock releases it to the next waiter
// (spec §D.4); a waiter that goes away is withdrawn from the queue.
func TestDisconnectReleasesToNextWaiter(t *testing.T) {
	h := start(t, options{})
	holder, gone, next := h.dial(t), h.dial(t), h.dial(t)
	holder.grant("l", "k", "0 300")
	gone.send("l", "k", "60")
	waitFor(t, "a waiter", func() bool { return h.waiters("k") == 1 })
	next.send("l", "k", "60 30")
	waitFor(t, "two waiters", func() bool { return h.waiters("k") == 2 })
	gone.c.Close()
	waitFor(t, "the closed waiter to leave the queue", func() bool { return h.waiters("k") == 1 })
	holder.c.Close()
	next.expect("ok T 30")
	waitFor(t, "the sessions to end", func() bool { return h.hub.Connections() == 1 })
}

// Shutdown after a drain (spec §D.5, v2): a request gets error_draining and
// a close, the listener closes (Serve returns), and Shutdown returns once
// every connection has ended.
func TestShutdownAfterDrain(t *testing.T) {
	h := start(t, options{})
	a, b := h.dial(t), h.dial(t)
	tok := a.grant("l", "k", "0 300")
	b.send("l", "k", "60")
	waitFor(t, "b to wait", func() bool { return h.waiters("k") == 1 })

	h.hub.Drain()
	b.expect("error") // a parked request ends with error
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shut <- h.srv.Shutdown(ctx)
	}()
	select {
	case err := <-h.served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		h.served <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Shutdown closed the listener")
	}
	if c, err := net.DialTimeout("tcp", h.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("a new connection was accepted after Shutdown began")
	}
	select {
	case <-shut:
		t.Fatal("Shutdown returned while connections were open")
	default:
	}
	a.send("r", "k", tok)
	a.expect("error_draining")
	a.closed()
	b.send("ping", "_", "_")
	b.expect("error_draining")
	b.closed()
	select {
	case err := <-shut:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown did not return once the connections ended")
	}
	if n := h.hub.Connections(); n != 0 {
		t.Fatalf("%d sessions after Shutdown", n)
	}
}

// Shutdown whose context ends closes the connections left.
func TestShutdownDeadlineClosesTheRest(t *testing.T) {
	h := start(t, options{})
	c := h.dial(t)
	c.grant("l", "k", "0 300")
	h.shutdown(50 * time.Millisecond)
	c.closed()
	if n := h.hub.Connections(); n != 0 {
		t.Fatalf("%d sessions after Shutdown", n)
	}
}

// Connections over --max-connections or --max-connections-per-ip are
// closed without a reply (spec §D.1), through the Limiter every listener
// of a server shares; a closed connection frees its place.
func TestConnectionCaps(t *testing.T) {
	for _, lim := range []*conncap.Limiter{{Max: 2}, {PerIP: 2}} {
		h := start(t, options{cfg: Config{Limiter: lim}})
		a, b := h.dial(t), h.dial(t)
		if n := lim.Open(); n != 2 {
			t.Fatalf("limiter counts %d, want 2", n)
		}
		if _, err := tls.Dial("tcp", h.addr, h.clientTLS()); err == nil {
			t.Fatalf("%+v: a third connection completed its handshake", lim)
		}
		a.expectPing()
		b.c.Close()
		waitFor(t, "the place to be freed", func() bool { return lim.Open() == 1 })
		h.dial(t).expectPing()
	}
}

// A reload changes the certificate of new connections only: one made
// before keeps working, and keeps its lock.
func TestReloadKeepsEstablishedConnections(t *testing.T) {
	h := start(t, options{})
	before := h.dial(t)
	tok := before.grant("l", "k", "0 300")
	old := before.c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber

	next := h.ca.Leaf(t, "renewed")
	certtest.WriteFile(t, h.certFile, next.CertPEM)
	certtest.WriteFile(t, h.keyFile, next.KeyPEM)
	if err := h.store.Reload(); err != nil {
		t.Fatal(err)
	}
	after := h.dial(t)
	if got := after.c.(*tls.Conn).ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(next.Cert.SerialNumber) != 0 {
		t.Fatalf("a new connection got certificate %v, want the reloaded %v (old %v)", got, next.Cert.SerialNumber, old)
	}
	after.send("l", "k", "0")
	after.expect("timeout") // still held by the connection from before
	before.send("n", "k", tok+" 60")
	before.expect("ok 60")
	before.send("r", "k", tok)
	before.expect("ok")
	after.send("l", "k", "0 30")
	after.expect("ok T 30")
}
