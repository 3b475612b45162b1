package cluster

import (
	"fmt"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Snapshots of formats V2 and V3 (fsm.go) carry the requests that
// connections sent behind a wait, which the FSM kept then (its parked
// map); the engine keeps them now, in its sessions' queues
// (engine/queue.go). Restore reads that section and hands them over.

// parkedConn is one connection's entry of that section: the encoded
// OpRequest ops it sent behind its request that waits, in order (none:
// it waits with nothing behind).
type parkedConn struct {
	conn uint64
	ops  []byte
}

// parked decodes the section: a count, then per connection (in
// connection order) its number and its ops, length-prefixed.
func (d *decoder) parked() []parkedConn {
	var ps []parkedConn
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		c, m := d.uvarint(), d.uvarint()
		if d.err != nil || m > uint64(len(d.b)) {
			d.fail("parked requests")
			break
		}
		ps = append(ps, parkedConn{conn: c, ops: d.b[:m:m]})
		d.b = d.b[m:]
	}
	return ps
}

// requeue applies the parked requests to the restored engine, connection
// by connection, each in its turn: every one of them queues behind its
// session's wait, as it waited behind the parked entry, stable-ref and
// barrier included (the engine answers them in their turn). Nothing
// runs, so nothing is delivered; a request that would run now means the
// snapshot does not agree with itself, and is refused.
// The orphans of such a snapshot are detached (engine.KindDetach), as
// their connections' closes detach them now: the engine's snapshot of
// that format does not say so.
func requeue(eng *engine.Engine, parked []parkedConn, conns map[uint64]engine.SessionID, now timerwheel.Instant) error {
	var fx engine.Effects
	for _, o := range eng.StableRefs().Orphans { // by ref
		eng.Apply(&engine.Command{Kind: engine.KindDetach, Session: o.Session, At: now}, &fx)
	}
	for _, p := range parked {
		if len(p.ops) == 0 {
			continue // waits, nothing behind: the engine knows it waits
		}
		sid, ok := conns[p.conn]
		if !ok {
			return fmt.Errorf("parked requests of connection %#x, which has no session", p.conn)
		}
		d := decoder{b: p.ops}
		for len(d.b) > 0 {
			op := d.op()
			if d.err != nil {
				return fmt.Errorf("parked requests of connection %#x: %w", p.conn, d.err)
			}
			if op.Kind != OpRequest || op.Conn != p.conn {
				return fmt.Errorf("parked requests of connection %#x: an op of kind %d for %#x", p.conn, op.Kind, op.Conn)
			}
			r := eng.Apply(&engine.Command{Kind: engine.KindRequest, Session: sid, At: now, Req: op.Req,
				Readopt: eng.Readopts(p.conn)}, &fx)
			if !r.Blocked || len(fx.List) > 0 {
				return fmt.Errorf("parked request of connection %#x runs: its session does not wait", p.conn)
			}
		}
	}
	return nil
}
