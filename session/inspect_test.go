package session

import (
	"net"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

type tlsConn struct{ *fakeConn }

func (tlsConn) Secure() bool { return true }

// A session's identity: its transport (TLS when the transport says so,
// godistlock by its codec) and its peer's address; an id the hub does
// not serve has none.
func TestIdentify(t *testing.T) {
	fs := newFakeServer(t, Config{}, engine.Config{})
	plain := fs.openFrom(&net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 5000})
	gd := fs.openProto(nil, Godistlock)
	sc := &fakeConn{fs: fs, remote: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 8), Port: 6000}}
	secure := fs.hub.Open(tlsConn{sc}, Dflockd, sc.peer())
	for _, c := range []struct {
		id   engine.SessionID
		want Identity
	}{
		{plain.sess.id, Identity{Transport: TransportTCP, RemoteAddr: "10.0.0.7:5000"}},
		{gd.sess.id, Identity{Transport: TransportGodistlock, RemoteAddr: "127.0.0.1:40000"}},
		{secure.id, Identity{Transport: TransportTLS, RemoteAddr: "10.0.0.8:6000", Secure: true}},
	} {
		if got, ok := fs.hub.Identify(c.id, 0); !ok || got != c.want {
			t.Errorf("session %d: %+v %v, want %+v", c.id, got, ok, c.want)
		}
	}
	if _, ok := fs.hub.Identify(engine.SessionID(1<<40), 0); ok {
		t.Error("an unknown session has an identity")
	}
	if got := fs.hub.StateNow(); got != fs.clock.Now() {
		t.Errorf("StateNow %d, want the hub clock's %d", got, fs.clock.Now())
	}
}
