package netconn

import "testing"

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
