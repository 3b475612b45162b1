package session

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A rare large use of the scratch (here a stats document of thousands of
// keys) must not stay allocated once the transport trims between events;
// ordinary use keeps its buffers.
func TestScratchTrimDropsPeakBuffers(t *testing.T) {
	fs := newFakeServer(t, Config{Profile: vocab.ProfileRF}, engine.Config{Profile: vocab.ProfileRF}) // rf stats list counters
	c := fs.open()
	var in strings.Builder
	for i := range 3000 {
		in.WriteString(request("incr", "a-counter-with-a-fairly-long-name-"+strconv.Itoa(i), "1"))
	}
	fs.traffic(c, in.String())
	fs.traffic(c, request("stats", "_", "_"))
	if n := cap(fs.scratch.Out); n <= keepOut {
		t.Fatalf("stats of 3000 counters used only %d bytes of scratch: the test does not exercise the trim", n)
	}
	fs.scratch.Trim()
	if n := cap(fs.scratch.Out); n > keepOut {
		t.Fatalf("scratch keeps %d bytes after Trim", n)
	}
	out := fs.scratch.Out
	fs.traffic(c, request("ping", "_", "_"))
	fs.scratch.Trim()
	if cap(fs.scratch.Out) != cap(out) {
		t.Fatalf("Trim dropped a small buffer (%d → %d bytes)", cap(out), cap(fs.scratch.Out))
	}
}

// A burst of pushes to an idle subscriber leaves it a small batch buffer,
// so thousands of idle subscribers do not each keep a burst's worth.
func TestPushBatchNotKeptAfterBurst(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	sub, sender := fs.open(), fs.open()
	fs.traffic(sub, request("listen", "ch", ""))
	var in strings.Builder
	for range 200 {
		in.WriteString(request("signal", "ch", strings.Repeat("p", 100)))
	}
	fs.traffic(sender, in.String())
	if got := strings.Count(string(sub.out), "sig ch "); got != 200 {
		t.Fatalf("subscriber got %d pushes, want 200", got)
	}
	if n := cap(sub.sess.backlog.batch); n > keepBatch {
		t.Fatalf("idle subscriber keeps a %d-byte push batch", n)
	}
}
