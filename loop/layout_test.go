package loop

import (
	"testing"
	"unsafe"
)

// The read timer converts a fired node back to its conn (readtimer.go),
// which is only valid while the node is conn's first field.
func TestConnTimerFirstField(t *testing.T) {
	if off := unsafe.Offsetof(conn{}.timer); off != 0 {
		t.Fatalf("conn.timer is at offset %d, want 0", off)
	}
}
