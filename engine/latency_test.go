package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// wantLatency checks a histogram against the spans (ms) it should hold:
// each lands in the first bucket whose bound is not below it.
func wantLatency(t *testing.T, name string, got Latency, spans ...int64) {
	t.Helper()
	var want Latency
	for _, ms := range spans {
		i := 0
		for i < len(LatencyBoundsMs) && ms > LatencyBoundsMs[i] {
			i++
		}
		want.Counts[i]++
		want.SumMs += uint64(ms)
	}
	if got != want {
		t.Fatalf("%s histogram %+v, want %+v (spans %v ms)", name, got, want, spans)
	}
}

// Waits run from the acquire to its grant or timeout (zero on the fast
// path); holds from the grant to release, expiry or disconnect; all
// measured on the commands' times, so exactly.
func TestLatencyHistograms(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c, d := h.session(), h.session(), h.session(), h.session()
	ta := wantGrant(t, h.do(a, "l", "k", "0 30"), 30) // wait 0
	h.advance(40 * time.Millisecond)
	wantBlocked(t, h.do(b, "l", "k", "10 30"))
	h.advance(120 * time.Millisecond)
	h.do(a, "r", "k", ta) // a held 160 ms; b waited 120 ms
	h.wantDelivered(b, vocab.StatusOK)
	wantBlocked(t, h.do(c, "l", "k", "2 30"))
	h.advance(2 * time.Second) // c times out after 2000 ms
	h.wantDelivered(c, vocab.StatusTimeout)
	wait, hold := h.eng.Latencies()
	wantLatency(t, "wait", wait, 0, 120, 2000)
	wantLatency(t, "hold", hold, 160)

	h.advance(28 * time.Second) // b's 30 s lease, granted 2000 ms ago, runs out
	wantGrant(t, h.do(d, "l", "k2", "0 30"), 30)
	h.advance(7 * time.Millisecond)
	h.close(d) // d's hold ends with its session
	wait, hold = h.eng.Latencies()
	wantLatency(t, "wait", wait, 0, 120, 2000, 0)
	wantLatency(t, "hold", hold, 160, 30000, 7)
	if wait.Count() != 4 || hold.Count() != 3 {
		t.Fatalf("counts %d and %d, want 4 and 3", wait.Count(), hold.Count())
	}
}

// A claim restored from a snapshot has no start time: its hold is left
// out rather than measured from a wrong origin; its successor's is not.
func TestLatencyAfterRestore(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	h.advance(5 * time.Second)
	var snap bytes.Buffer
	if err := h.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	eng, err := Restore(Config{TokenKey: testKey, Start: h.clock.Now()}, &snap)
	if err != nil {
		t.Fatal(err)
	}
	h.eng = eng
	h.do(a, "r", "k", tk)
	if _, hold := h.eng.Latencies(); hold.Count() != 0 {
		t.Fatalf("a restored hold was measured: %+v", hold)
	}
	tk = wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	h.advance(3 * time.Millisecond)
	h.do(a, "r", "k", tk)
	wait, hold := h.eng.Latencies()
	wantLatency(t, "wait", wait, 0)
	wantLatency(t, "hold", hold, 3)
}
