package loop

import (
	"testing"
	"time"
)

// participants is the number of connections waiting at barrier k.
func (p profile) participants(t *testing.T, k string) int {
	t.Helper()
	return int(stat(t, p.ts, "barriers", k, "participants"))
}

// barrierTripScenario: a barrier of 3 trips for all when the third
// arrives, and its name then starts a new generation (spec §B.11).
func barrierTripScenario(t *testing.T, p profile) {
	k := key("bar")
	a, b, c := p.dial(t), p.dial(t), p.dial(t)
	a.send("bwait", k, "3 10")
	waitFor(t, func() bool { return p.participants(t, k) == 1 })
	b.send("bwait", k, "3 10")
	waitFor(t, func() bool { return p.participants(t, k) == 2 })
	c.do("bwait", k, "2 10", "error_barrier_count_mismatch")
	a.silent(50 * time.Millisecond)
	c.do("bwait", k, "3 10", "ok") // the third trips it for all
	a.expect("ok")
	b.expect("ok")
	// A new generation, of another count.
	a.send("bwait", k, "2 10")
	waitFor(t, func() bool { return p.participants(t, k) == 1 })
	b.do("bwait", k, "2 10", "ok")
	a.expect("ok")
}

func TestBarrierOverTheWire(t *testing.T)   { barrierTripScenario(t, v2Profile()) }
func TestBarrierOverTheWireRF(t *testing.T) { barrierTripScenario(t, rfProfile()) }

// barrierLeaverScenario: a participant of a barrier of 3 leaves before
// the trip, by its timeout or by a non-blocking arrival. In rf that breaks
// the barrier: every other participant returns timeout at once (§B.11,
// §I.26). In v2 the leaver just leaves and the others keep waiting.
func barrierLeaverScenario(t *testing.T, p profile) {
	for _, leave := range []func(c *client, k string){
		func(c *client, k string) { c.do("bwait", k, "3 1", "timeout") },
		func(c *client, k string) { c.do("bwait", k, "3 0", "timeout") },
	} {
		k := key("bar")
		a, b, c, d := p.dial(t), p.dial(t), p.dial(t), p.dial(t)
		a.send("bwait", k, "3 10")
		waitFor(t, func() bool { return p.participants(t, k) == 1 })
		leave(b, k)
		if p.rf {
			a.expect("timeout") // well before its own 10 s
			if n := p.participants(t, k); n != 0 {
				t.Fatalf("%d participants left at a broken barrier", n)
			}
			continue
		}
		a.silent(100 * time.Millisecond) // still waiting, alone
		if n := p.participants(t, k); n != 1 {
			t.Fatalf("%d participants, want 1", n)
		}
		c.send("bwait", k, "3 10")
		waitFor(t, func() bool { return p.participants(t, k) == 2 })
		d.do("bwait", k, "3 10", "ok")
		a.expect("ok")
		c.expect("ok")
	}
}

func TestBarrierLeaverLeavesAlone(t *testing.T) { barrierLeaverScenario(t, v2Profile()) }

// TestBarrierBreaksRF is barrierLeaverScenario's rf side: one early leaver
// breaks the barrier for all.
func TestBarrierBreaksRF(t *testing.T) { barrierLeaverScenario(t, rfProfile()) }
