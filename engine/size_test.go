package engine

import (
	"testing"
	"unsafe"
)

// One resource and one slot exist per held lock, so their sizes are most
// of what a held lock costs in memory (target: ≤ 200 B of RSS per lock).
// Growing either past its size class should be a deliberate decision.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(resource{}); n > 80 {
		t.Errorf("resource is %d bytes, want ≤ 80 (Go size class)", n)
	}
	if n := unsafe.Sizeof(slot{}); n > 128 {
		t.Errorf("slot is %d bytes, want ≤ 128 (Go size class)", n)
	}
}
