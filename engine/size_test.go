package engine

import (
	"strings"
	"testing"
	"unsafe"
)

// One resource (with its key) and one slot exist per held lock, so their
// sizes are most of what a held lock costs in memory (target: ≤ 160 B of
// RSS per lock, issue #37). Growing one past its size class should be a
// deliberate decision.
func TestRecordSizes(t *testing.T) {
	if n := unsafe.Sizeof(resource{}); n != 24 {
		t.Errorf("resource is %d bytes, want 24 (the key's bytes follow it)", n)
	}
	// Each allocation a resource heads fills its size class, and its
	// key's length byte sits right after the resource (resource.key).
	for _, c := range []struct {
		name      string
		size, off uintptr
		want      uintptr
	}{
		{"resource23", unsafe.Sizeof(resource23{}), unsafe.Offsetof(resource23{}.n), 48},
		{"resource39", unsafe.Sizeof(resource39{}), unsafe.Offsetof(resource39{}.n), 64},
		{"resource55", unsafe.Sizeof(resource55{}), unsafe.Offsetof(resource55{}.n), 80},
		{"resource71", unsafe.Sizeof(resource71{}), unsafe.Offsetof(resource71{}.n), 96},
		{"resourceOut", unsafe.Sizeof(resourceOut{}), unsafe.Sizeof(resource{}), 40},
	} {
		if c.size != c.want || c.off != unsafe.Sizeof(resource{}) {
			t.Errorf("%s is %d bytes with its key at %d, want %d and %d", c.name, c.size, c.off, c.want, unsafe.Sizeof(resource{}))
		}
	}
	if n := unsafe.Sizeof(slot{}); n > 80 {
		t.Errorf("slot is %d bytes, want ≤ 80 (Go size class)", n)
	}
}

// Every key length reads back, across the allocations' boundaries.
func TestResourceKeys(t *testing.T) {
	for n := range 200 {
		key := strings.Repeat("k", n)
		if n > 0 {
			key = key[:n-1] + string(rune('a'+n%26))
		}
		for _, ns := range []namespace{nsLock, nsSem} {
			for _, rw := range []bool{false, true} {
				r := newResource([]byte(key), ns, 7, rw, 3)
				if got := r.key(); got != key {
					t.Fatalf("key of %d bytes reads back as %q", n, got)
				}
				if r.namespace() != ns || r.isRW() != rw || r.limit != 7 || r.lastActive != 3 || r.nHolders() != 0 {
					t.Fatalf("key of %d bytes: namespace %v rw %v limit %d lastActive %d holders %d", n, r.namespace(), r.isRW(), r.limit, r.lastActive, r.nHolders())
				}
			}
		}
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
