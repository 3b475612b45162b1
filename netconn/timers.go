package netconn

import (
	"math"
	"sync"
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
	mu        sync.Mutex // guards wheel, due, published
	srv       *Server
	index     int // the shard's target index in the server's driver
	wheel     *timerwheel.Wheel
	due       []*conn
	published timerwheel.Tick // the deadline the driver knows; MaxInt64 = none
	// counters are the request counts of the shard's connections
	// (Config.Count; nil otherwise). They are shared, unlike a gnet
	// loop's: a connection's own would cost every idle connection half a
	// kilobyte and a registration, while an add contended by a few cores
	// costs little next to the TLS record it came in.
	counters *session.Counters
	// reads counts the reads of the shard's connections (release.go).
	reads atomic.Uint64
}

func newTimerShard(srv *Server, index int, now timerwheel.Tick) *timerShard {
	return &timerShard{srv: srv, index: index, wheel: timerwheel.New(now), published: math.MaxInt64}
}

// arm asks for c's timer at deadline. Earliest wins, as in the gnet
// loops: a node already due sooner is kept, and the session, called
// then, asks again for what it still needs. That keeps a burst of
// SetTimer calls from moving the node back and forth.
func (t *timerShard) arm(c *conn, deadline timerwheel.Tick) {
	t.set(c, deadline, false)
}

// reset moves c's timer to deadline, earlier or later: the handshake and
// linger deadlines replace whatever was armed.
func (t *timerShard) reset(c *conn, deadline timerwheel.Tick) {
	t.set(c, deadline, true)
}

func (t *timerShard) set(c *conn, deadline timerwheel.Tick, replace bool) {
	t.mu.Lock()
	if !replace && c.timer.Armed() && c.timer.Deadline() <= deadline {
		t.mu.Unlock()
		return
	}
	t.wheel.Reset(&c.timer, deadline)
	notify := deadline < t.published
	if notify {
		t.published = deadline
	}
	t.mu.Unlock()
	if notify {
		t.srv.driver.Notify(t.index, deadline)
	}
}

// stop disarms c's timer.
func (t *timerShard) stop(c *conn) {
	t.mu.Lock()
	t.wheel.Cancel(&c.timer)
	t.mu.Unlock()
}

// Expire implements timerwheel.Target: it fires the nodes due by now and
// tells their connections once the lock is released.
func (t *timerShard) Expire(now timerwheel.Instant) (timerwheel.Tick, bool) {
	t.mu.Lock()
	t.wheel.Advance(now.Tick(), 0, t.collect)
	due := t.due
	next, ok := t.wheel.NextDeadline()
	if ok {
		t.published = next
	} else {
		t.published = math.MaxInt64
	}
	t.mu.Unlock()
	// The driver calls Expire one call at a time, so due is ours until
	// it returns.
	for i, c := range due {
		c.expired()
		due[i] = nil
	}
	if cap(due) > keepDue {
		due = nil // a mass expiry's list is not kept
	}
	t.mu.Lock()
	t.due = due[:0]
	t.mu.Unlock()
	return next, ok
}

// keepDue bounds the due list a shard keeps between expiries.
const keepDue = 1024

func (t *timerShard) collect(n *timerwheel.Node) {
	t.due = append(t.due, (*conn)(unsafe.Pointer(n))) // conn.timer is its first field
}
