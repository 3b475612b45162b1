package main

import (
	"net"
	"sync"

	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
)

// cappedListener admits each connection it accepts under the connection
// caps (--max-connections, --max-connections-per-ip), closing a refused
// one without a reply (spec §D.1), as the relay does for the client
// listener. With --cluster-forward the member's server has no limiter of
// its own (the relay admits its connections), so the godistlock
// listener, which is not relayed, admits its own with this.
type cappedListener struct {
	net.Listener
	lim    *conncap.Limiter
	events *ratelog.Logger
}

func (l cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.lim == nil || l.lim.Admit(c.RemoteAddr()) {
			return &cappedConn{Conn: c, lim: l.lim}, nil
		}
		l.events.Warn("connection refused: --max-connections or --max-connections-per-ip reached",
			"remote", c.RemoteAddr().String())
		_ = c.Close()
	}
}

// cappedConn holds its place under the caps until it is closed, whoever
// closes it.
type cappedConn struct {
	net.Conn
	lim  *conncap.Limiter
	once sync.Once
}

// NetConn is the admitted socket, which the gnet loops serve a duplicate
// of; they Close c when the connection ends.
func (c *cappedConn) NetConn() net.Conn { return c.Conn }

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.lim != nil {
			c.lim.Release(c.Conn.RemoteAddr())
		}
	})
	return err
}
