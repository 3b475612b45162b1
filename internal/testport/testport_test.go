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

// Listen binds such a port and keeps it: a second bind of it fails.
func TestListenKeepsThePort(t *testing.T) {
	l := Listen(t)
	defer l.Close()
	p := l.Addr().(*net.TCPAddr).Port
	if p < floor || p >= ephemeralLow() {
		t.Fatalf("port %d outside %d..%d", p, floor, ephemeralLow()-1)
	}
	if l2, err := net.Listen("tcp", l.Addr().String()); err == nil {
		l2.Close()
		t.Fatalf("port %d could be bound again while Listen held it", p)
	}
}
