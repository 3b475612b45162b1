package timerwheel

import (
	"testing"
	"time"
)

func TestInstantRounding(t *testing.T) {
	const ms = Instant(time.Millisecond)
	for _, c := range []struct {
		at     Instant
		dur    int64
		after  Tick
		floors Tick
	}{
		{0, 0, 0, 0},
		{0, 5, 5, 0},
		{1, 5, 6, 0},              // 1 ns into tick 0: a 5 ms span ends inside tick 5
		{ms - 1, 5, 6, 0},         // x.999999 ms: the old truncation made this 5, ending ~1 ms early
		{7 * ms, 33000, 33007, 7}, // on a tick boundary: no rounding
		{7*ms + 1, 1000, 1008, 7},
	} {
		if got := c.at.After(c.dur); got != c.after {
			t.Errorf("Instant(%d).After(%d) = %d, want %d", c.at, c.dur, got, c.after)
		}
		if got := c.at.Tick(); got != c.floors {
			t.Errorf("Instant(%d).Tick() = %d, want %d", c.at, got, c.floors)
		}
		// The property that matters: the deadline has not passed at any
		// instant before at + dur, and has passed at at + dur rounded up.
		end := c.at + Instant(c.dur)*ms
		if end > 0 && (end - 1).Passed(c.at.After(c.dur)) {
			t.Errorf("deadline %d passed at %d, before start %d + %d ms", c.at.After(c.dur), end-1, c.at, c.dur)
		}
		if !Of(c.at.After(c.dur)).Passed(c.at.After(c.dur)) {
			t.Errorf("deadline %d not passed at its own tick", c.at.After(c.dur))
		}
	}
}

func TestFakeClockInstants(t *testing.T) {
	c := NewFakeClock(10)
	if c.Now() != Of(10) {
		t.Fatalf("Now = %d, want %d", c.Now(), Of(10))
	}
	c.SetInstant(Of(10) + 999_999)
	if c.Now().Tick() != 10 || c.Now().After(1) != 12 {
		t.Fatalf("x.999999 ms: tick %d, 1 ms deadline %d; want 10, 12", c.Now().Tick(), c.Now().After(1))
	}
	c.Add(5)
	if c.Now() != Of(15)+999_999 {
		t.Fatalf("Add(5) → %d", c.Now())
	}
}
