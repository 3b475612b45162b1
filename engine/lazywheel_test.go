package engine

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// An idle engine allocates no timer wheel (3 KB a shard); the first timer
// of a shard creates its wheel at the shard's time, and it fires as usual.
func TestWheelIsLazy(t *testing.T) {
	h := newHarness(t, Config{})
	for i := range h.eng.shards {
		if h.eng.shards[i].wheel != nil {
			t.Fatalf("shard %d has a wheel before any timer", i)
		}
	}
	// Time passes on the idle shards first: the wheel made later must
	// start at that time, not at the engine's start.
	h.clock.Add(5000)
	h.expire()
	s := h.session()
	key := []byte("lazy")
	if r := h.apply(s, &vocab.Request{Op: vocab.OpLock, Key: key, Lease: 2}); r.Status != vocab.StatusOK {
		t.Fatalf("lock: %+v", r)
	}
	sh := h.eng.shardFor(key)
	if sh.wheel == nil {
		t.Fatal("the lease armed no wheel")
	}
	if got := sh.wheel.Now(); got < 6000 {
		t.Fatalf("the new wheel starts at %d, want the shard's time (≥ 6000)", got)
	}
	for i := range h.eng.shards {
		if sh := &h.eng.shards[i]; sh.wheel != nil && sh != h.eng.shardFor(key) {
			t.Fatalf("shard %d has a wheel without a timer", i)
		}
	}
	h.clock.Add(1999)
	h.expire()
	if h.eng.Keys() != 1 || sh.wheel.Len() != 1 {
		t.Fatalf("the lease fired early: keys %d, armed %d", h.eng.Keys(), sh.wheel.Len())
	}
	h.clock.Add(1)
	h.expire()
	if sh.wheel.Len() != 0 {
		t.Fatalf("the lease did not fire at its deadline: armed %d", sh.wheel.Len())
	}
}
