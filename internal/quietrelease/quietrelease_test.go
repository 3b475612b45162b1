package quietrelease

import "testing"

func TestReleasesOncePerQuietSpell(t *testing.T) {
	releases := 0
	q := &Releaser{release: func() { releases++ }}
	step := func(traffic uint64, want int) {
		t.Helper()
		q.Tick(traffic)
		if releases != want {
			t.Fatalf("after Tick(%d): %d releases, want %d", traffic, releases, want)
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
