package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// claimLog against a slice: pushes and compactions in random mixes, across
// the head's growth and the chunks' boundaries, keep the claims and their
// order; a compaction leaves at most the chunks the next doubling fills.
func TestClaimLogModel(t *testing.T) {
	slots := make([]slot, 1000)
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var l claimLog
		var model []claim
		next := uint32(0)
		for step := range 3000 {
			switch op := rng.IntN(100); {
			case op < 97:
				next++
				c := claim{sl: &slots[rng.IntN(len(slots))], gen: next, shard: uint16(next)}
				l.push(c)
				model = append(model, c)
			default:
				mod := uint32(rng.IntN(4) + 1)
				keep := func(c claim) bool { return c.gen%mod == 0 }
				l.compact(keep)
				model = slices.DeleteFunc(model, func(c claim) bool { return !keep(c) })
				if max := max(0, (2*len(model)-1)/claimChunk); len(l.rest) > max {
					t.Fatalf("seed %d step %d: %d chunks kept for %d claims, want ≤ %d", seed, step, len(l.rest), len(model), max)
				}
			}
			if l.len() != len(model) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, l.len(), len(model))
			}
			if step%97 == 0 || step == 2999 {
				var got []claim
				for i := range l.nchunks() {
					cs := l.chunk(i)
					got = append(got, cs...)
				}
				if !slices.Equal(got, model) {
					t.Fatalf("seed %d step %d: claims differ from the model", seed, step)
				}
			}
		}
	}
}

// A compaction clears what it drops, so the slots can be collected, and
// a compaction to nothing leaves the head's room for reuse.
func TestClaimLogCompactClears(t *testing.T) {
	var sl slot
	var l claimLog
	for range 3 * claimChunk {
		l.push(claim{sl: &sl})
	}
	l.compact(func(claim) bool { return false })
	if l.len() != 0 || len(l.rest) != 0 || cap(l.head) != claimChunk {
		t.Fatalf("after compacting to nothing: len %d, %d chunks, head cap %d", l.len(), len(l.rest), cap(l.head))
	}
	for _, c := range l.head[:cap(l.head)] {
		if c.sl != nil {
			t.Fatal("a dropped claim still names its slot")
		}
	}
}
