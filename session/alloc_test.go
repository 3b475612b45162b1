//go:build !race

package session

import (
	"bytes"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The whole request path — framing, parsing, engine, reply encoding, the
// write — must not allocate for an l then r on an existing key.
func TestRequestPathDoesNotAllocate(t *testing.T) {
	// One Input per frame, fences from a clock-like floor; the r frame
	// carries the token the l reply returned. counted: with the
	// transport's counters and latency histograms on, as every production
	// transport has them (/metrics).
	for _, counted := range []bool{false, true} {
		name := "one-frame-per-read"
		if counted {
			name += "-counted"
		}
		t.Run(name, func(t *testing.T) { oneFramePerRead(t, counted, nil) })
	}
	// With a policy of 100 rules, the identity's check on each request.
	t.Run("one-frame-per-read-policy", func(t *testing.T) { oneFramePerRead(t, false, hundredRules(t, "alloc")) })
	pipelinedNoAlloc(t)
}

func oneFramePerRead(t *testing.T, counted bool, pol *policy.Policy) {
	fs := newFakeServer(t, Config{Policy: pol}, engine.Config{FenceFloor: 1 << 60})
	if counted {
		fs.scratch.Counters = new(Counters)
		fs.hub.RegisterCounters(fs.scratch.Counters)
	}
	c := fs.open()
	if pol != nil {
		if got := fs.traffic(c, request("auth", "_", "tok-a")); got != "ok\n" {
			t.Fatalf("auth: %q", got)
		}
		c.out = c.out[:0]
	}
	c.poison = false
	lock := []byte(request("l", "alloc-key", "0 10"))
	var rel [64]byte
	relLen := copy(rel[:], "r\nalloc-key\n")
	cycle := func() {
		c.out = c.out[:0]
		c.load(lock)
		fs.input(c)
		if len(c.out) != len("ok ")+fence.TokenLen+len(" 10\n") || !bytes.HasPrefix(c.out, []byte("ok ")) {
			t.Fatalf("l: %q", c.out)
		}
		n := relLen + copy(rel[relLen:], c.out[3:3+fence.TokenLen])
		rel[n] = '\n'
		c.out = c.out[:0]
		c.load(rel[:n+1])
		fs.input(c)
		if string(c.out) != "ok\n" {
			t.Fatalf("r: %q", c.out)
		}
	}
	for range 100 { // create the key, warm free lists and buffers
		cycle()
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("l + r allocate %.1f times per cycle", n)
	}
	if counted && fs.hub.Counts().Latency[vocab.OpLock].Counts[0] == 0 {
		t.Fatal("counted, but no l latency observed")
	}
}

func pipelinedNoAlloc(t *testing.T) {
	// Both frames pipelined in one read; the token is predicted
	// (Engine.Token of the next fence).
	t.Run("pipelined", func(t *testing.T) {
		fs := newFakeServer(t, Config{}, engine.Config{})
		c := fs.open()
		c.poison = false
		head := request("l", "alloc-key", "0 10") + "r\nalloc-key\n"
		buf := make([]byte, len(head)+fence.TokenLen+1)
		copy(buf, head)
		buf[len(buf)-1] = '\n'
		want := "ok " + tokenFor(1) + " 10\nok\n"
		cycle := func() {
			tok := fs.eng.Token(fs.eng.LastFence() + 1)
			tok.Append(buf[len(head):len(head)])
			c.out = c.out[:0]
			c.load(buf)
			fs.input(c)
			if len(c.out) != len(want) || !bytes.Equal(c.out[3:3+fence.TokenLen], buf[len(head):len(head)+fence.TokenLen]) ||
				!bytes.HasSuffix(c.out, []byte(" 10\nok\n")) {
				t.Fatalf("got %q", c.out)
			}
		}
		for range 100 {
			cycle()
		}
		if n := testing.AllocsPerRun(1000, cycle); n != 0 {
			t.Fatalf("pipelined l + r allocate %.1f times per read", n)
		}
	})
}

// A hand-off delivers the grant to the waiter's session (Deliver), which
// must not allocate either: each hand-off of a hot key and each answer of
// a cluster member comes that way. Two sessions take turns: the holder
// releases, the waiter's grant is delivered, the old holder queues again.
func TestHandOffDoesNotAllocate(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	a, b := fs.open(), fs.open()
	a.poison, b.poison = false, false
	lock := []byte(request("l", "handoff-key", "10 10"))
	// The replies are compared as bytes: a string of one would allocate.
	send := func(c *fakeConn, in []byte) []byte {
		c.out = c.out[:0]
		c.load(in)
		fs.input(c)
		return c.out
	}
	var rel [64]byte
	relLen := copy(rel[:], "r\nhandoff-key\n")
	release := func(c *fakeConn, grant []byte) {
		if len(grant) != len("ok ")+fence.TokenLen+len(" 10\n") || !bytes.HasPrefix(grant, []byte("ok ")) {
			t.Fatalf("grant: %q", grant)
		}
		n := relLen + copy(rel[relLen:], grant[3:3+fence.TokenLen])
		rel[n] = '\n'
		if got := send(c, rel[:n+1]); !bytes.Equal(got, []byte("ok\n")) {
			t.Fatalf("r: %q", got)
		}
	}
	// deliver hands c its one posted result, reusing the slice.
	deliver := func(c *fakeConn) []byte {
		if len(c.posted) != 1 {
			t.Fatalf("%d results posted, want the grant", len(c.posted))
		}
		c.out = c.out[:0]
		c.sess.Deliver(c.posted[0])
		c.posted = c.posted[:0]
		return c.out
	}
	holding := send(a, lock)
	if got := send(b, lock); len(got) != 0 {
		t.Fatalf("second l answered at once: %q", got)
	}
	cycle := func() {
		release(a, holding)                      // the grant goes to b
		granted := deliver(b)                    // b holds
		if got := send(a, lock); len(got) != 0 { // a waits behind b
			t.Fatalf("l behind a holder answered at once: %q", got)
		}
		release(b, granted)                      // the grant goes to a
		holding = deliver(a)                     // a holds
		if got := send(b, lock); len(got) != 0 { // b waits again
			t.Fatalf("l behind a holder answered at once: %q", got)
		}
	}
	for range 100 { // warm free lists and buffers
		cycle()
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("two hand-offs allocate %.1f times", n)
	}
}
