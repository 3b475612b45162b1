package httpapi

import (
	"net"
	"sync"

	"github.com/dflockd-ng/dflockd/internal/conncap"
)

// capListener enforces --http-max-connections-per-ip where connections
// are accepted: one over the cap is closed at once, without a reply, as
// dflockd closes TCP connections over its caps (spec §D.1). A listener
// rather than http.Server.ConnState: a refused connection never reaches
// net/http (no goroutine, no buffers, no TLS handshake if TLS is layered
// on top of this listener), and the place it held is given back exactly
// once, when the connection closes, with no map from connections to
// addresses.
type capListener struct {
	net.Listener
	caps *conncap.Limiter
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.caps.Admit(c.RemoteAddr()) {
			return &capConn{Conn: c, caps: l.caps}, nil
		}
		c.Close()
	}
}

// capConn gives its place back when it closes.
type capConn struct {
	net.Conn
	caps *conncap.Limiter
	once sync.Once
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.caps.Release(c.RemoteAddr()) })
	return err
}
