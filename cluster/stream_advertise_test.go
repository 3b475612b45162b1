package cluster

import (
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// TestStreamAdvertise: raft tells the other members Stream.Addr as this
// member's address (the leader's heartbeats carry it, followers probe it),
// so with Advertise it is the configured name, never resolved, not the
// wildcard address the listener bound.
func TestStreamAdvertise(t *testing.T) {
	token := []byte(strings.Repeat("t", MinTokenLen))
	for _, tc := range []struct {
		advertise raft.ServerAddress
		want      func(ln net.Listener) string
	}{
		{"dflockd-0.dflockd-peers.example.invalid:7000", func(net.Listener) string {
			return "dflockd-0.dflockd-peers.example.invalid:7000"
		}},
		{"", func(ln net.Listener) string { return ln.Addr().String() }},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewStream(ln, StreamConfig{Token: token, Advertise: tc.advertise})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := s.Addr().String(), tc.want(ln); got != want {
			t.Errorf("Advertise %q: Addr() = %q, want %q", tc.advertise, got, want)
		}
		if s.Addr().Network() != "tcp" {
			t.Errorf("Advertise %q: network %q", tc.advertise, s.Addr().Network())
		}
		// raft's NetworkTransport reports the stream's address as its own.
		trans := raft.NewNetworkTransport(s, 1, 0, nil)
		if got, want := string(trans.LocalAddr()), tc.want(ln); got != want {
			t.Errorf("Advertise %q: transport LocalAddr = %q, want %q", tc.advertise, got, want)
		}
		_ = trans.Close()
	}
}
