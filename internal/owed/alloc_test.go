//go:build !race

package owed

import "testing"

// A warm queue does not allocate: a single node's session is owed one
// answer at a time (the inline place), a cluster member's up to maxOwed
// (the ring, grown once).
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	for _, depth := range []int{1, 128} {
		var q Queue[[4]uint64]
		cycle := func() {
			for range depth {
				q.Reserve([4]uint64{1})
			}
			for range depth {
				q.Fill()[1] = 2
				if _, ok := q.Next(); !ok {
					t.Fatal("a filled place did not leave")
				}
			}
		}
		cycle()
		if n := testing.AllocsPerRun(100, cycle); n != 0 {
			t.Fatalf("depth %d: %.1f allocations per cycle", depth, n)
		}
	}
}
