package netconn

import (
	"net"
	"testing"
)

// Hangup closes the connections it is asked to once what was posted to
// them before is written: here a parked request's reply (the drain's
// error), then the close. The others stay open until a Hangup(nil).
func TestHangupAfterPostedReplies(t *testing.T) {
	h := start(t, options{})
	holder, waiter := h.dial(t), h.dial(t)
	waiterRaw := h.lastAccepted()
	other := h.dial(t)
	holder.grant("l", "k", "0 300")
	waiter.send("l", "k", "60")
	waitFor(t, "a waiter", func() bool { return h.waiters("k") == 1 })

	h.hub.Drain() // posts error to the parked request
	if n := h.srv.Hangup(func(c net.Conn) bool { return c == net.Conn(waiterRaw) }); n != 1 {
		t.Fatalf("Hangup matched %d connections, want 1", n)
	}
	waiter.expect("error")
	waiter.closed()
	waitFor(t, "the waiter's connection to end", func() bool { return h.srv.Connections() == 2 })

	if n := h.srv.Hangup(nil); n != 2 {
		t.Fatalf("Hangup(nil) matched %d connections, want 2", n)
	}
	holder.closed()
	other.closed()
	waitFor(t, "every connection to end", func() bool { return h.srv.Connections() == 0 && h.hub.Connections() == 0 })
}
