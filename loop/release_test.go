package loop

import "testing"

func TestQuietReleaserReleasesOncePerQuietSpell(t *testing.T) {
	releases := 0
	q := &quietReleaser{release: func() { releases++ }}
	step := func(traffic uint64, want int) {
		t.Helper()
		q.tick(traffic)
		if releases != want {
			t.Fatalf("after tick(%d): %d releases, want %d", traffic, releases, want)
		}
	}
	step(10, 0) // traffic moved: busy
	step(25, 0)
	step(25, 1) // a whole tick without traffic: release
	step(25, 1) // still quiet: not again
	step(26, 1) // busy again
	step(26, 2) // a new quiet spell
	step(26, 2)
}
