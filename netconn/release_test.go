package netconn

import "testing"

func TestQuietReleaserReleasesOncePerQuietSpell(t *testing.T) {
	releases := 0
	q := &quietReleaser{release: func() { releases++ }}
	step := func(reads uint64, want int) {
		t.Helper()
		q.tick(reads)
		if releases != want {
			t.Fatalf("after tick(%d): %d releases, want %d", reads, releases, want)
		}
	}
	step(10, 0) // reads moved: busy
	step(25, 0)
	step(25, 1) // a whole interval without a read: release
	step(25, 1) // still quiet: not again
	step(26, 1) // busy again
	step(26, 2) // a new quiet spell
	step(26, 2)
}

// Every read counts towards the server's reads, which the releaser
// watches.
func TestReadsAreCounted(t *testing.T) {
	h := start(t, options{})
	c := h.dial(t)
	before := h.srv.reads()
	c.expectPing()
	if after := h.srv.reads(); after <= before {
		t.Fatalf("reads %d after a request, %d before", after, before)
	}
}
