package netconn

import (
	"sync/atomic"
	"unsafe"

	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// timerShard is a timer wheel of some of the server's connections: one
// node each (conn.timer), for the session's timer (Transport.SetTimer),
// the handshake deadline or the linger of a close. A server spreads its
// connections over a few shards so that owners arming timers on many
// cores do not all take one mutex. The server's driver calls Expire; due
// connections are told through conn.expired, outside the shard's lock.
type timerShard struct {
	*timerwheel.Locked
	// counters are the request counts of the shard's connections
	// (Config.Count; nil otherwise). They are shared, unlike a gnet
	// loop's: a connection's own would cost every idle connection half a
	// kilobyte and a registration, while an add contended by a few cores
	// costs little next to the TLS record it came in.
	counters *session.Counters
	// reads counts the reads of the shard's connections (release.go).
	reads atomic.Uint64
}

// newTimerShard returns the shard that is target index of srv's driver.
func newTimerShard(srv *Server, index int, now timerwheel.Tick) *timerShard {
	return &timerShard{Locked: timerwheel.NewLocked(now,
		func(deadline timerwheel.Tick) { srv.driver.Notify(index, deadline) },
		func(n *timerwheel.Node) { connOf(n).expired() })}
}

// arm asks for c's timer at deadline. Earliest wins, as in the gnet
// loops: a node already due sooner is kept, and the session, called
// then, asks again for what it still needs. That keeps a burst of
// SetTimer calls from moving the node back and forth.
func (t *timerShard) arm(c *conn, deadline timerwheel.Tick) { t.Arm(&c.timer, deadline) }

// reset moves c's timer to deadline, earlier or later: the handshake and
// linger deadlines replace whatever was armed.
func (t *timerShard) reset(c *conn, deadline timerwheel.Tick) { t.Reset(&c.timer, deadline) }

// stop disarms c's timer.
func (t *timerShard) stop(c *conn) { t.Cancel(&c.timer) }

// connOf is the conn whose timer n is: conn.timer is its first field.
func connOf(n *timerwheel.Node) *conn { return (*conn)(unsafe.Pointer(n)) }
