package testport

import (
	"net"
	"testing"
)

// Ports are below the ephemeral range, free, and never handed out twice.
func TestPortsBelowTheEphemeralRangeAndDistinct(t *testing.T) {
	seen := map[int]bool{}
	low := ephemeralLow()
	for range 200 {
		p := Port(t)
		if p < floor || p >= low {
			t.Fatalf("port %d outside %d..%d", p, floor, low-1)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	l, err := net.Listen("tcp", Addr(t))
	if err != nil {
		t.Fatalf("the port Addr picked is not free: %v", err)
	}
	l.Close()
}
