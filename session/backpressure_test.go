package session

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// incrs returns n pipelined "incr <key> 1" requests: their replies count
// up, so order and completeness can be checked from the replies alone.
func incrs(key string, n int) string {
	return strings.Repeat(request("incr", key, "1"), n)
}

// checkCounting fails unless replies is "ok 1\nok 2\n…ok n\n".
func checkCounting(t *testing.T, replies string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(replies, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d replies, want %d", len(lines), n)
	}
	for i, l := range lines {
		if l != "ok "+strconv.Itoa(i+1) {
			t.Fatalf("reply %d is %q, want ok %d", i, l, i+1)
		}
	}
}

// A client that pipelines and does not read gets no more served once
// maxUnsent of its replies wait: the rest of its input stays unparsed, the
// connection is not closed (no write timeout), not even by the read
// timeout, and once the peer reads it is served to the end, in order.
func TestBackpressurePausesAndResumes(t *testing.T) {
	fs := newFakeServer(t, Config{ReadTimeout: 3 * time.Second}, engine.Config{})
	c := fs.open()
	c.stalled = true
	const n = 40_000 // ~450 KiB of replies, several times the bound
	fs.traffic(c, incrs("ctr", n))
	if c.closed {
		t.Fatal("closed while paused")
	}
	served := len(c.unsent)
	if served < maxUnsent || served > maxUnsent+64 {
		t.Fatalf("%d bytes of replies unsent, want maxUnsent (%d) plus at most one reply", served, maxUnsent)
	}
	if c.InboundBuffered() == 0 {
		t.Fatal("every request was served: nothing held back")
	}
	held := c.InboundBuffered()
	// More input while paused is not served either.
	fs.traffic(c, incrs("ctr", 10))
	if len(c.unsent) != served || c.InboundBuffered() != held+10*len(request("incr", "ctr", "1")) {
		t.Fatalf("served while paused: unsent %d→%d, input %d→%d", served, len(c.unsent), held, c.InboundBuffered())
	}
	// Ten seconds of not reading: neither the read timeout (3 s) nor
	// anything else closes it.
	for range 100 {
		fs.runTimers(100 * time.Millisecond)
	}
	if c.closed {
		t.Fatal("a paused connection was closed by its read timeout")
	}
	// The peer reads part of it: still paused until all is taken.
	c.stalled = false
	c.drainOut(served / 2)
	fs.runTimers(100 * time.Millisecond)
	if len(c.out) != served/2 {
		t.Fatalf("served before the output drained: %d bytes out", len(c.out))
	}
	for range 1000 {
		c.drainOut(-1)
		fs.runTimers(100 * time.Millisecond)
		if c.InboundBuffered() == 0 && len(c.unsent) == 0 {
			break
		}
	}
	checkCounting(t, string(c.out), n+10)
}

// With --write-timeout, a paused peer that reads nothing is cut once the
// timeout passes; one that keeps reading, however slowly, is not.
func TestBackpressureWriteTimeout(t *testing.T) {
	fs := newFakeServer(t, Config{ReadTimeout: 30 * time.Second, WriteTimeout: time.Second}, engine.Config{})
	idle, slow := fs.open(), fs.open()
	idle.stalled, slow.stalled = true, true
	fs.traffic(idle, incrs("a", 20_000))
	fs.traffic(slow, incrs("b", 20_000))
	for range 30 { // 3 s: the slow reader takes a little every 100 ms
		slow.drainOut(100)
		fs.runTimers(100 * time.Millisecond)
	}
	if !idle.closed {
		t.Fatal("a peer that read nothing for 3 s outlived a 1 s write timeout")
	}
	if slow.closed {
		t.Fatal("a peer that kept reading was cut by the write timeout")
	}
	got := string(idle.out) + string(idle.unsent)
	if !strings.HasPrefix("ok 1\nok 2\n", got[:min(len(got), 10)]) {
		t.Fatalf("cut connection's output starts %q", got[:min(len(got), 20)])
	}
}

// A paused connection where reading cannot be paused (the fake has no
// socket) is closed when its buffered input passes maxPausedInput.
func TestBackpressureFallbackBound(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	c := fs.open()
	c.stalled = true
	fs.traffic(c, incrs("ctr", 20_000))
	chunk := incrs("ctr", 10_000)
	for i := 0; !c.closed; i++ {
		if i*len(chunk) > 2*maxPausedInput {
			t.Fatalf("still open with %d bytes buffered", c.InboundBuffered())
		}
		fs.traffic(c, chunk)
	}
}
