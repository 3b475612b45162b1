package netconn

import (
	"crypto/tls"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The dflockd protocol over TLS: the same sessions as over gnet, so these
// check the transport (framing across reads, ordering, deliveries from
// other connections), not every command's semantics.

func TestTLSLocksAndSemaphores(t *testing.T) {
	h := start(t, options{})
	a, b := h.dial(t), h.dial(t)

	tok := a.grant("l", "k", "0 30")
	b.send("l", "k", "0") // a try-lock of a held key
	b.expect("timeout")
	a.send("r", "k", tok)
	a.expect("ok")
	b.send("l", "k", "0 20")
	b.expect("ok T 20")

	s1 := a.grant("sl", "s", "0 2 30")
	_ = b.grant("sl", "s", "0 2 30")
	c := h.dial(t)
	c.send("sl", "s", "0 2")
	c.expect("timeout")
	a.send("sr", "s", s1)
	a.expect("ok")
	c.send("sl", "s", "0 2")
	c.expect("ok T 33")
}

func TestTLSTwoPhase(t *testing.T) {
	h := start(t, options{})
	a, b := h.dial(t), h.dial(t)
	a.send("e", "k", "30")
	tok := strings.Fields(a.expect("acquired T 30"))[1]
	b.send("e", "k", "30")
	b.expect("queued")
	b.send("w", "k", "10") // parks: a holds
	waitFor(t, "b's wait to park", func() bool { return h.waiters("k") == 1 })
	a.send("r", "k", tok)
	a.expect("ok")
	b.expect("ok T 30")
}

// A blocked l is granted when another connection releases; what was
// pipelined behind it is answered after its grant, in order.
func TestTLSBlockedLockGrantedLater(t *testing.T) {
	h := start(t, options{})
	a, b := h.dial(t), h.dial(t)
	tok := a.grant("l", "k", "0 30")
	b.raw(request("l", "k", "10 30") + request("ping", "_", "_") + request("incr", "n", "1"))
	waitFor(t, "b to wait", func() bool { return h.waiters("k") == 1 })
	a.send("r", "k", tok)
	a.expect("ok")
	b.expect("ok T 30")
	b.expect("ok")
	b.expect("ok 1")
}

// A blocked l whose timeout passes answers timeout.
func TestTLSBlockedLockTimesOut(t *testing.T) {
	h := start(t, options{})
	a, b := h.dial(t), h.dial(t)
	a.grant("l", "k", "0 30")
	b.send("l", "k", "2")
	waitFor(t, "b to wait", func() bool { return h.waiters("k") == 1 })
	h.tick(2001 * time.Millisecond)
	b.expect("timeout")
}

// Pipelined requests in one write, and requests split across many writes
// and TLS records, are answered in order, one reply each.
func TestTLSPipelinedInOrder(t *testing.T) {
	h := start(t, options{})
	c := h.dial(t)
	const n = 5000
	var sb strings.Builder
	for range n {
		sb.WriteString(request("incr", "n", "1"))
	}
	all := sb.String()
	c.raw(all)
	for i := 1; i <= n; i++ {
		c.expect("ok " + strconv.Itoa(i))
	}
	// The same frames, a few bytes per write: every record boundary
	// falls somewhere inside a frame.
	for i := 0; i < 300; i += 7 {
		c.raw(all[i:min(i+7, 300)])
	}
	c.raw(all[300:600])
	for i := n + 1; i <= n+600/len(request("incr", "n", "1")); i++ {
		c.expect("ok " + strconv.Itoa(i))
	}
}

// Pushes from another connection reach a listener, between its replies.
func TestTLSPushes(t *testing.T) {
	h := start(t, options{})
	sub, pub := h.dial(t), h.dial(t)
	sub.send("listen", "news.*", "")
	sub.expect("ok")
	pub.send("signal", "news.today", "hello world")
	pub.expect("ok 1")
	sub.expect("sig news.today hello world")
	sub.send("ping", "_", "_")
	sub.expect("ok")
	// A burst bigger than one push batch arrives whole and in order.
	var sb strings.Builder
	for i := range 2000 {
		sb.WriteString(request("signal", "news.x", "p"+strconv.Itoa(i)))
	}
	pub.raw(sb.String())
	for range 2000 {
		pub.expect("ok 1")
	}
	for i := range 2000 {
		sub.expect("sig news.x p" + strconv.Itoa(i))
	}
}

func TestTLSAuth(t *testing.T) {
	h := start(t, options{sess: session.Config{AuthToken: "s3cret"}})
	good := h.dial(t)
	good.send("auth", "_", "s3cret")
	good.expect("ok")
	good.grant("l", "k", "0 30")

	bad := h.dial(t)
	bad.send("auth", "_", "wrong")
	bad.expect("error_auth")
	// The close comes after the cool-down, not before.
	waitFor(t, "the failed session's timer", func() bool { return len(h.conns()) == 2 })
	h.tick(50 * time.Millisecond)
	if n := len(h.conns()); n != 2 {
		t.Fatalf("%d connections 50 ms into the cool-down, want 2", n)
	}
	h.tick(60 * time.Millisecond)
	bad.closed()
	waitFor(t, "the refused connection to end", func() bool { return len(h.conns()) == 1 })

	// Another command first is a failed auth too.
	other := h.dial(t)
	h.tick(time.Second) // past the address's cool-down
	other.send("l", "k2", "0")
	other.expect("error_auth")
	h.tick(101 * time.Millisecond)
	other.closed()
	good.send("ping", "_", "_")
	good.expect("ok")
}

// The godistlock codec runs over TLS too.
func TestTLSGodistlock(t *testing.T) {
	h := start(t, options{sess: session.Config{GodistlockID: "node-1", Version: "v9"}, proto: session.Godistlock,
		eng: engine.Config{MaxLocks: -1}})
	c := h.dial(t)
	c.raw("HELLO 0.1 n1\n")
	c.expect("HELLO n1 node-1 v9")
	c.raw("ON k 30000 a1\n")
	if got := c.line(); !strings.HasPrefix(got, "GIVE a1 ") {
		t.Fatalf("ON: %q", got)
	}
}

// Under v1 a parked request does not notice its client's half-close: it
// is granted, the reply is written, and only then is the close noticed
// (session/v1.go). Under v2 the half-close cancels it.
func TestHalfCloseWhileWaiting(t *testing.T) {
	for _, p := range []vocab.Profile{vocab.ProfileV1, vocab.ProfileV2} {
		h := start(t, options{sess: session.Config{Profile: p}})
		a, b := h.dial(t), h.dial(t)
		tok := a.grant("l", "k", "0 30")
		b.send("l", "k", "10 30")
		waitFor(t, "b to wait", func() bool { return h.waiters("k") == 1 })
		if err := b.c.(*tls.Conn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if p == vocab.ProfileV2 {
			waitFor(t, "the wait to be cancelled", func() bool { return h.waiters("k") == 0 })
			b.closed()
			continue
		}
		a.send("r", "k", tok)
		a.expect("ok")
		b.expect("ok T 30")
		b.closed()
		waitFor(t, "b's lock to be released", func() bool { return h.hub.Connections() == 1 })
		a.grant("l", "k", "0 30")
	}
}

// With Count, the requests of every connection, open or closed, are in
// the hub's counts.
func TestCounts(t *testing.T) {
	h := start(t, options{cfg: Config{Count: true}})
	a, b := h.dial(t), h.dial(t)
	for range 3 {
		a.expectPing()
	}
	b.expectPing()
	b.send("l", "", "0") // an empty key: error
	b.expect("error")
	b.c.Close()
	waitFor(t, "b to end", func() bool { return h.hub.Connections() == 1 })
	got := h.hub.Counts()
	if got.Requests[vocab.OpPing] != 4 || got.Replies[vocab.StatusError] != 1 {
		t.Fatalf("counted %d pings and %d errors, want 4 and 1", got.Requests[vocab.OpPing], got.Replies[vocab.StatusError])
	}
	h.shutdown(time.Millisecond) // closes a
	if got := h.hub.Counts(); got.Requests[vocab.OpPing] != 4 {
		t.Fatalf("after Shutdown the hub counts %d pings, want 4", got.Requests[vocab.OpPing])
	}
}

// Deliveries kick an owner out of its Read while its client sends too:
// kicks race with reads that return data, and late kicks end later reads.
// Every push and every reply arrives, in order, and nothing is closed.
func TestDeliveriesWhileReading(t *testing.T) {
	h := start(t, options{})
	sub, pub := h.dial(t), h.dial(t)
	sub.send("listen", "ch", "")
	sub.expect("ok")
	const signals, pings = 3000, 3000
	sent := make(chan error, 2)
	go func() {
		for i := range pings {
			if _, err := sub.c.Write([]byte(request("incr", "n", "1"))); err != nil {
				sent <- err
				return
			}
			if i%64 == 0 {
				time.Sleep(50 * time.Microsecond) // let reads end empty-handed now and then
			}
		}
		sent <- nil
	}()
	go func() {
		for i := range signals {
			if _, err := pub.c.Write([]byte(request("signal", "ch", strconv.Itoa(i)))); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	nextSig, nextOK := 0, 1
	for nextSig < signals || nextOK <= pings {
		l := sub.line()
		switch {
		case strings.HasPrefix(l, "sig "):
			if l != "sig ch "+strconv.Itoa(nextSig) {
				t.Fatalf("push %q, want sig ch %d", l, nextSig)
			}
			nextSig++
		case l == "ok "+strconv.Itoa(nextOK):
			nextOK++
		default:
			t.Fatalf("got %q; next push %d, next reply ok %d", l, nextSig, nextOK)
		}
	}
	for range 2 {
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	for range signals {
		pub.expect("ok 1")
	}
}
