package conncap

import (
	"net"
	"testing"
)

func tcp(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }

func TestPerIPAndTotalCaps(t *testing.T) {
	l := &Limiter{Max: 4, PerIP: 2}
	a1, a2, a3 := tcp("10.0.0.1", 1), tcp("10.0.0.1", 2), tcp("::ffff:10.0.0.1", 3)
	if !l.Admit(a1) || !l.Admit(a2) {
		t.Fatal("the first two from one address were refused")
	}
	if l.Admit(a3) {
		t.Fatal("a third from the same address (IPv4-mapped) was admitted")
	}
	if !l.Admit(tcp("10.0.0.2", 1)) || !l.Admit(tcp("2001:db8::1", 1)) {
		t.Fatal("other addresses were refused")
	}
	if l.Admit(tcp("10.0.0.3", 1)) {
		t.Fatal("a fifth connection passed --max-connections 4")
	}
	l.Release(a1)
	if !l.Admit(a3) {
		t.Fatal("after a release the address was still full")
	}
	if n := l.Open(); n != 4 {
		t.Fatalf("%d open, want 4", n)
	}
	for _, a := range []net.Addr{a2, a3, tcp("10.0.0.2", 1), tcp("2001:db8::1", 1)} {
		l.Release(a)
	}
	if n, m := l.Open(), len(l.perIP); n != 0 || m != 0 {
		t.Fatalf("after releasing all: %d open, %d addresses tracked", n, m)
	}
}

func TestZeroLimiterAdmitsAll(t *testing.T) {
	var l Limiter
	for i := range 1000 {
		if !l.Admit(tcp("10.0.0.1", i)) {
			t.Fatal("refused with no caps")
		}
	}
	if len(l.perIP) != 0 {
		t.Fatal("addresses tracked with no per-IP cap")
	}
}
