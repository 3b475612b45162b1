package loop

import "testing"

func TestQuietReleaserReleasesOncePerQuietSpell(t *testing.T) {
	free, releases := uint64(0), 0
	q := &quietReleaser{free: func() uint64 { return free }, release: func() { releases++ }}
	step := func(traffic uint64, want int) {
		t.Helper()
		q.tick(traffic)
		if releases != want {
			t.Fatalf("after tick(%d) with %d free: %d releases, want %d", traffic, free, releases, want)
		}
	}
	free = 64 << 20
	step(10, 0) // traffic moved: busy
	step(25, 0)
	step(25, 1) // a whole tick without traffic: release
	step(25, 1) // still quiet: not again
	step(26, 1)
	free = releaseMin - 1
	step(26, 1) // quiet, but too little to be worth a forced GC
	free = releaseMin
	step(26, 1) // already judged for this quiet spell
	step(30, 1)
	step(30, 2)
}
