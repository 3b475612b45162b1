package loop

import (
	"net"
	"testing"
)

// TestHalfCloseWhileBlocked: under --compat=rf a blocked request does not
// notice its client's half-close, as the redis-feats line reads nothing
// while a request waits (spec §A.6): `printf 'l\nk\n10\n' | nc -N` gets
// its grant, and only then is the close noticed and the grant released by
// the disconnect cleanup. Under v2 the half-close withdraws the wait and
// closes the connection with no reply (its peer-close watcher).
func TestHalfCloseWhileBlocked(t *testing.T) {
	t.Run("rf", func(t *testing.T) {
		k := key("halfclose-rf")
		a, b := dial(t, rfsrv), dial(t, rfsrv)
		tok := a.do("l", k, "0 30", "ok T 30 F")[1]
		b.send("l", k, "10 30")
		waitFor(t, func() bool { return waitersOnServer(t, rfsrv, k) == 1 })
		if err := b.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		a.do("r", k, tok, "ok")
		b.expect("ok T 30 F")
		if got, err := b.line(replyWithin); err == nil {
			t.Fatalf("after the grant: %q, want the close", got)
		}
		// The cleanup released b's grant: a new client gets the lock at once.
		dial(t, rfsrv).do("l", k, "0 30", "ok T 30 F")
	})
	t.Run("v2", func(t *testing.T) {
		k := key("halfclose-v2")
		a, b := dial(t, plain), dial(t, plain)
		a.do("l", k, "0 30", "ok T 30")
		b.send("l", k, "10 30")
		waitFor(t, func() bool { return waitersOnServer(t, plain, k) == 1 })
		if err := b.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool { return waitersOnServer(t, plain, k) == 0 })
		if got, err := b.line(replyWithin); err == nil {
			t.Fatalf("after the half-close: %q, want the close and no reply", got)
		}
	})
}
