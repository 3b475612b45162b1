package session

import (
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// bucketOf is the index of the bucket that holds seconds.
func bucketOf(t *testing.T, seconds float64) int {
	t.Helper()
	for i, b := range LatencyBounds {
		if seconds <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// Requests answered at once are observed with their read; a waiting
// lock from its arrival to its grant, its wait included; a request
// still waiting is not observed yet. The fake clock makes the durations
// exact.
func TestLatencyByCommand(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	fs.scratch.Counters = new(Counters)
	fs.hub.RegisterCounters(fs.scratch.Counters)
	holder, waiter := fs.open(), fs.open()

	// One read of three requests: all answered in it, at the same clock
	// reading, so their latency is 0 on the fake clock.
	got := fs.traffic(holder, request("l", "k", "0 30")+request("incr", "n", "1")+request("ping", "_", "_"))
	if !strings.HasPrefix(got, "ok ") || !strings.HasSuffix(got, "ok 1\nok\n") {
		t.Fatalf("replies: %q", got)
	}
	tok := strings.Fields(got)[1]
	if got := fs.traffic(waiter, request("l", "k", "10 30")); got != "" {
		t.Fatalf("the waiter was answered at once: %q", got)
	}
	c := fs.hub.Counts()
	for op, want := range map[vocab.Op]uint64{vocab.OpLock: 1, vocab.OpIncr: 1, vocab.OpPing: 1} {
		if c.Latency[op].Counts[0] != want || c.Latency[op].SumNs != 0 {
			t.Errorf("%v: %v, want %d in the first bucket and a sum of 0", op, c.Latency[op], want)
		}
	}

	// 2.5 s later the holder releases: the waiter's grant took 2.5 s.
	fs.clock.Add(timerwheel.Tick(2500))
	if got := fs.traffic(holder, request("r", "k", tok)); got != "ok\n" {
		t.Fatalf("release: %q", got)
	}
	if !strings.HasPrefix(string(waiter.out), "ok ") {
		t.Fatalf("the waiter: %q, want its grant", waiter.out)
	}
	c = fs.hub.Counts()
	l := c.Latency[vocab.OpLock]
	wantSum := uint64(2500 * time.Millisecond)
	if b := bucketOf(t, 2.5); l.Counts[0] != 1 || l.Counts[b] != 1 || l.SumNs != wantSum {
		t.Fatalf("l: %v, want one in the first bucket, one in bucket %d (≤ %vs), sum %d ns", l, b, LatencyBounds[b], wantSum)
	}
	if r := c.Latency[vocab.OpRelease]; r.Counts[0] != 1 {
		t.Fatalf("r: %v", r)
	}
}

// Without counters nothing is measured, and nothing is kept per owed
// request but the place the session's sequencer holds for its answer.
func TestLatencyOffWithoutCounters(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	_, waiter, _ := blockedConn(t, fs, "k", "")
	if waiter.sess.owed.Len() != 1 || len(fs.scratch.answered.ops) != 0 {
		t.Fatalf("latency kept without counters: %d owed, %v", waiter.sess.owed.Len(), fs.scratch.answered)
	}
}

// steppingClock moves by step at every reading, so that the test knows
// what each reading gives and counts them.
type steppingClock struct {
	t, step timerwheel.Instant
	reads   int
}

func (c *steppingClock) Now() timerwheel.Instant {
	c.t += c.step
	c.reads++
	return c.t
}

// A goroutine's reads are timed at most once per latencySampleEvery: the
// reads in between take no clock reading at their end and are observed
// with the duration last measured, so every request is counted.
func TestLatencySampledReads(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	fs.scratch.Counters = new(Counters)
	fs.hub.RegisterCounters(fs.scratch.Counters)
	c := fs.open()
	step := timerwheel.Instant(300 * time.Microsecond)
	clock := &steppingClock{t: fs.clock.Now(), step: step}
	fs.hub.clock = clock
	// Arrivals 300 µs apart (one reading each), ends 300 µs after their
	// arrival when timed: reads 1 and 4 are timed (4 arrives 1.2 ms
	// after 1), 2 and 3 fall within 1 ms of 1 and are not.
	for i := range 4 {
		if got := fs.traffic(c, request("ping", "_", "_")); got != "ok\n" {
			t.Fatalf("ping %d: %q", i, got)
		}
	}
	if clock.reads != 6 {
		t.Fatalf("%d clock readings for 4 reads, want 6: 4 arrivals and 2 timed ends", clock.reads)
	}
	p := fs.hub.Counts().Latency[vocab.OpPing]
	b := bucketOf(t, 0.0003)
	if p.Counts[b] != 4 || p.SumNs != 4*uint64(step) {
		t.Fatalf("ping: %v, want 4 observations of 300 µs in bucket %d", p, b)
	}
}
