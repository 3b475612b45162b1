package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

// TestFSMSnapshotAnywhere: a replica restored from a snapshot taken at
// any of several points of random logs (failovers, stable refs, orphans,
// tenants, godistlock, force releases among them) goes on exactly as the
// replica that ran the whole log. TestFSMDeterminism cuts one log once;
// snapshots taken within a lease of a failover, while the earlier
// epoch's holds were kept, could not be restored, and it did not cut
// there: the first seed here does.
func TestFSMSnapshotAnywhere(t *testing.T) {
	seeds, batches := 8, 1500
	if testing.Short() {
		seeds = 2
	}
	for seed := 1; seed <= seeds; seed++ {
		g := &fsmGen{rng: rand.New(rand.NewPCG(uint64(seed), 99))}
		ref := &textOutput{}
		a := NewFSM(engine.Config{Shards: 4}, ref)
		for range batches {
			data := g.batch(t)
			replay(a, [][]byte{data}, uint64(len(g.batches)))
			for _, line := range ref.lines[len(ref.lines)-min(len(ref.lines), 8):] {
				if f := strings.Fields(line); len(f) > 3 && len(f[3]) == 32 {
					g.tokens = append(g.tokens[max(0, len(g.tokens)-16):], f[3])
				}
			}
		}
		for _, cut := range []int{100, 400, 700, 1000, 1300} {
			where := fmt.Sprintf("seed %d, snapshot after batch %d", seed, cut)
			first := &textOutput{}
			c := NewFSM(engine.Config{Shards: 8}, first)
			replay(c, g.batches[:cut], 1)
			d, rest := restoredCopy(t, c, 16, where)
			replay(d, g.batches[cut:], uint64(cut)+1)
			compare(t, where, ref.lines[len(first.lines):], rest.lines)
			if d.Digest() != a.Digest() {
				t.Fatalf("%s: the restored replica ends in another state", where)
			}
		}
	}
}
