package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

func wantValue(t *testing.T, r Result, v string) {
	t.Helper()
	if r.Status != vocab.StatusOK || r.Kind != KindValue || r.Value != v {
		t.Fatalf("got %+v, want value %q", r, v)
	}
}

func wantInt(t *testing.T, r Result, v int64) {
	t.Helper()
	if r.Status != vocab.StatusOK || r.Kind != KindInt || r.Int != v {
		t.Fatalf("got %+v, want integer %d", r, v)
	}
}

func TestKVTTLExpiresByTimerAndLazily(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.session()
	wantStatus(t, h.do(s, "kset", "a", "x\t2"), vocab.StatusOK)
	wantStatus(t, h.do(s, "kset", "b", "y\t2"), vocab.StatusOK)
	h.advance(1999 * time.Millisecond)
	wantValue(t, h.do(s, "kget", "a", ""), "x")
	h.advance(time.Millisecond) // the timer removes a and b
	if n := h.eng.rfKeys.Load(); n != 0 {
		t.Fatalf("%d keys left after expiry", n)
	}
	wantStatus(t, h.do(s, "kget", "a", ""), vocab.StatusNil)

	// Without the driver: a read past the deadline still sees nothing.
	wantStatus(t, h.do(s, "kset", "c", "z\t1"), vocab.StatusOK)
	h.clock.Add(1000)
	wantStatus(t, h.do(s, "kget", "c", ""), vocab.StatusNil)
	// An expired entry counts as absent for kcas.
	wantStatus(t, h.do(s, "kset", "d", "old\t1"), vocab.StatusOK)
	h.clock.Add(1000)
	wantStatus(t, h.do(s, "kcas", "d", "old\tnew\t"), vocab.StatusCASConflict)
	wantStatus(t, h.do(s, "kcas", "d", "\tnew\t"), vocab.StatusOK)
	// A kset without TTL clears an earlier TTL.
	wantStatus(t, h.do(s, "kset", "e", "v\t1"), vocab.StatusOK)
	wantStatus(t, h.do(s, "kset", "e", "w"), vocab.StatusOK)
	h.advance(5 * time.Second)
	wantValue(t, h.do(s, "kget", "e", ""), "w")
}

func TestMaxKeysSpansCountersAndKV(t *testing.T) {
	h := newHarness(t, Config{MaxKeys: 2})
	s := h.session()
	wantInt(t, h.do(s, "incr", "c", "1"), 1)
	wantStatus(t, h.do(s, "kset", "k", "v"), vocab.StatusOK)
	wantStatus(t, h.do(s, "incr", "c2", "1"), vocab.StatusErrorMaxKeys)
	wantStatus(t, h.do(s, "kset", "k2", "v"), vocab.StatusErrorMaxKeys)
	wantStatus(t, h.do(s, "kcas", "k3", "\tv\t"), vocab.StatusErrorMaxKeys)
	wantInt(t, h.do(s, "incr", "c", "1"), 2) // existing keys still work
	wantInt(t, h.do(s, "get", "c9", ""), 0)  // get does not create
	wantStatus(t, h.do(s, "kdel", "k", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "kset", "k2", "v"), vocab.StatusOK)
	// Locks are capped separately (--max-locks).
	wantGrant(t, h.do(s, "l", "lock", "0"), 33)
}

func TestCounterGC(t *testing.T) {
	h := newHarness(t, Config{GCMaxIdle: time.Second})
	s := h.session()
	wantInt(t, h.do(s, "incr", "zero", "0"), 0)
	wantInt(t, h.do(s, "incr", "five", "5"), 5)
	wantStatus(t, h.do(s, "kset", "untimed", "v"), vocab.StatusOK)
	h.advance(2 * time.Second)
	h.gc()
	// A zero counter is pruned, a non-zero one and (in v2) an untimed KV
	// entry stay.
	if n := h.eng.rfKeys.Load(); n != 2 {
		t.Fatalf("%d keys after GC, want 2", n)
	}
	wantInt(t, h.do(s, "get", "five", ""), 5)
	wantValue(t, h.do(s, "kget", "untimed", ""), "v")

	rf := newHarness(t, Config{GCMaxIdle: time.Second, Profile: vocab.ProfileRF})
	s = rf.session()
	wantStatus(t, rf.do(s, "kset", "untimed", "v"), vocab.StatusOK)
	rf.advance(2 * time.Second)
	rf.gc()
	wantStatus(t, rf.do(s, "kget", "untimed", ""), vocab.StatusNil) // spec §I.28, rf only
}
