package loop

import (
	"testing"
	"time"
)

// rwScenario: readers share while a writer waits, a later reader does not
// barge past the writer, and the writer's release hands over to it.
func rwScenario(t *testing.T, p profile) {
	k := key("rw")
	queued := func(n int) func() bool {
		return func() bool { return int(stat(t, p.ts, "rw_locks", k, "waiters")) == n }
	}
	r1, r2, w, r3 := p.dial(t), p.dial(t), p.dial(t), p.dial(t)
	t1 := r1.do("rl", k, "0 30", p.grant(30))[1]
	t2 := r2.do("rl", k, "0 30", p.grant(30))[1]
	w.send("wl", k, "10 30")
	waitFor(t, queued(1))
	r3.do("rl", k, "0 30", "timeout") // no barging past the queued writer
	r3.send("rl", k, "10 30")
	waitFor(t, queued(2))
	r1.do("rr", k, t1, "ok")
	w.silent(100 * time.Millisecond) // r2 still reads
	r2.do("rn", k, t2+" 40", p.renewed(t2, 40))
	r2.do("rr", k, t2, "ok")
	tw := w.expect(p.grant(30))[3:35]
	r3.silent(100 * time.Millisecond)
	w.do("wr", k, tw, "ok")
	r3.expect(p.grant(30))
	r1.do("l", k, "0", "error_type_mismatch")
	r1.do("we", k, "10", "queued") // behind r3's read
}

func TestRWLockOverTheWire(t *testing.T)   { rwScenario(t, v2Profile()) }
func TestRWLockOverTheWireRF(t *testing.T) { rwScenario(t, rfProfile()) }
