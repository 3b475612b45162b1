package engine

import (
	"testing"
	"unsafe"
)

// One resource and one slot exist per held lock, so their sizes are most
// of what a held lock costs in memory (target: ≤ 160 B of RSS per lock, issue #37).
// Growing either past its size class should be a deliberate decision.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(resource{}); n > 48 {
		t.Errorf("resource is %d bytes, want ≤ 48 (Go size class)", n)
	}
	if n := unsafe.Sizeof(slot{}); n > 80 {
		t.Errorf("slot is %d bytes, want ≤ 80 (Go size class)", n)
	}
}

// A fired timer node is converted back to its record (timers.go), which
// is only valid while the node is the record's first field.
func TestTimerFirstField(t *testing.T) {
	for name, off := range map[string]uintptr{
		"slot":          unsafe.Offsetof(slot{}.timer),
		"kvEntry":       unsafe.Offsetof(kvEntry{}.timer),
		"popWaiter":     unsafe.Offsetof(popWaiter{}.timer),
		"barrierWaiter": unsafe.Offsetof(barrierWaiter{}.timer),
	} {
		if off != 0 {
			t.Errorf("%s.timer is at offset %d, want 0", name, off)
		}
	}
}
