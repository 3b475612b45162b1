package netconn

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// A plaintext client is not a TLS client: its request is never answered
// (spec §D.2: the whole listener is TLS), and the server closes it.
func TestPlaintextClientGetsNoReply(t *testing.T) {
	h := start(t, options{})
	c := h.dialRaw(t)
	c.send("l", "k", "0 30")
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c.c)
	if err != nil && !isReset(err) {
		t.Fatalf("reading: %v (the connection should have been closed)", err)
	}
	// Go's TLS server answers a record that is not TLS with nothing at all.
	if len(got) != 0 {
		t.Fatalf("the plaintext client got %q", got)
	}
	waitFor(t, "the connection to end", func() bool { return h.srv.Connections() == 0 })
	if n := h.hub.Connections(); n != 0 {
		t.Fatalf("%d sessions opened for a client that never shook hands", n)
	}
	if ls := h.hub.Engine().LockStats(h.clock.Now(), 0).Locks; len(ls) != 0 {
		t.Fatalf("the plaintext request took effect: %+v", ls)
	}
}

// A client that trusts another CA refuses the server's certificate; the
// server ends the connection without opening a session.
func TestClientTrustingAnotherCAFails(t *testing.T) {
	h := start(t, options{})
	other := certtest.NewCA(t, "another CA")
	_, err := tls.Dial("tcp", h.addr, certtest.ClientConfig(other.Pool))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("handshake with a client trusting another CA: %v, want an unknown authority error", err)
	}
	waitFor(t, "the connection to end", func() bool { return h.srv.Connections() == 0 })
	if n := h.hub.Connections(); n != 0 {
		t.Fatalf("%d sessions after a failed handshake", n)
	}
	// The server goes on serving clients that trust it.
	h.dial(t).expectPing()
}

// A client that connects and never completes the handshake is closed once
// the handshake timeout passes, not before.
func TestHandshakeTimeout(t *testing.T) {
	h := start(t, options{cfg: Config{HandshakeTimeout: 3 * time.Second}})
	c := h.dialRaw(t)
	c.raw("\x16\x03\x01") // the start of a record header, and then nothing
	waitFor(t, "the handshake deadline", func() bool {
		cs := h.conns()
		return len(cs) == 1 && cs[0].handshaking.Load() && timerArmed(cs[0])
	})
	h.tick(2999 * time.Millisecond)
	if n := h.srv.Connections(); n != 1 {
		t.Fatalf("%d connections before the handshake timeout, want 1", n)
	}
	h.tick(2 * time.Millisecond)
	c.closed()
	waitFor(t, "the connection to end", func() bool { return h.srv.Connections() == 0 })
	// A handshake that completes in time is not cut by its old deadline.
	ok := h.dial(t)
	// The client's handshake may end before the server's: wait for the
	// session, or the tick would rightly time the handshake out.
	waitFor(t, "the session to open", func() bool { return h.hub.Connections() == 1 })
	h.tick(5 * time.Second)
	ok.expectPing()
}

func (c *client) expectPing() {
	c.t.Helper()
	c.send("ping", "_", "_")
	c.expect("ok")
}

// isReset reports a connection reset by the peer: a close with unread
// input sends an RST.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// A failed handshake is logged, rate limited through Config.Events; a peer
// that connects and closes without a byte (a health check) only at debug.
func TestFailedHandshakeLogged(t *testing.T) {
	var log syncBuffer
	events := ratelog.New(slog.New(slog.NewTextHandler(&log, nil)), 1000, 1000)
	h := start(t, options{cfg: Config{Events: events}})
	check := h.dialRaw(t)
	check.c.Close()
	waitFor(t, "the health check to end", func() bool { return h.srv.Connections() == 0 && h.acceptedCount() == 1 })
	plain := h.dialRaw(t)
	plain.send("ping", "_", "_")
	plain.closed()
	waitFor(t, "the failure to be logged", func() bool { return strings.Contains(log.String(), "TLS handshake failed") })
	if n := strings.Count(log.String(), "TLS handshake failed"); n != 1 {
		t.Fatalf("%d failures logged at info, want 1 (the plaintext client's):\n%s", n, log.String())
	}
}

// syncBuffer is a bytes.Buffer written by the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// timerArmed reports whether c's timer node is in its shard's wheel.
func timerArmed(c *conn) bool { return c.shard.Armed(&c.timer) }
