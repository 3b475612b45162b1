package cluster

import (
	"encoding/binary"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Stable refs and orphans (spec §G): the engine keeps them
// (engine/stableref.go); the FSM runs the commands they call for, in
// the log's order: a connection that presented `stable-ref <ref>` and
// closes while the orphan TTL (--orphan-ttl of the leader, replicated by
// OpOrphanTTL) is on leaves its session detached, as its ref's orphan; a
// new connection whose first request is that stable-ref takes it over;
// orphans nobody took over within the TTL are closed like any connection.
// This applies to a connection of this leadership that closed (EOF,
// error, timeout alike: the member cannot tell a crashed client from a
// graceful one) and to the connections of a previous leader.

// request applies a connection's request. stable-ref and barrier are the
// replicated state's own where the connection has no session yet (so
// nothing of it waits): a first stable-ref may take an orphan over.
// Otherwise the engine runs them, in their turn behind a wait
// (engine/queue.go): barrier answers ok, stable-ref hands its ref back
// for run to keep.
func (f *FSM) request(op *Op, now timerwheel.Instant) {
	sid, ok := f.eng.ConnSession(op.Conn)
	if !ok {
		switch op.Req.Op {
		case vocab.OpStableRef:
			f.eng.TakeOver(op.Conn, string(op.Req.Token), now)
			f.fx.Reset()
			f.deliver(op.Conn, &engine.Result{Status: vocab.StatusOK})
			return
		case vocab.OpBarrier:
			// Applied: everything before it in the log is.
			f.fx.Reset()
			f.deliver(op.Conn, &engine.Result{Status: vocab.StatusOK})
			return
		}
		sid = f.session(op.Conn, now)
	}
	f.run(op.Conn, &engine.Command{Kind: engine.KindRequest, Session: sid, At: now, Req: op.Req,
		Readopt: f.eng.Readopts(op.Conn)})
}

// keepRef records the ref a stable-ref of conn handed back through the
// engine (engine.KindStableRef) and makes r its plain ok. conn has a
// session, so it takes no orphan over.
func (f *FSM) keepRef(conn uint64, r *engine.Result) {
	f.eng.KeepRef(conn, r.Value)
	r.Kind, r.Value = engine.KindStatus, ""
}

// closeConn ends connection conn: its session becomes an orphan if it has
// a ref and orphans are on, else it is closed (keep: holds stay until
// their leases end, as for a previous leader's connections).
func (f *FSM) closeConn(conn uint64, keep bool, now timerwheel.Instant) {
	l := f.eng.LeaveConn(conn, now)
	// A connection whose peer went away may wait for this close to end
	// (session.Session.PeerClosed): tell it.
	f.fx.Reset()
	f.deliver(conn, &engine.Result{Kind: engine.KindGone})
	// The engine's close or detach parts the session from conn (nothing
	// more goes to conn) and drops what it queued.
	switch {
	case l.Session == 0:
	case l.Orphaned:
		if l.Displaced != 0 {
			f.run(0, &engine.Command{Kind: engine.KindClose, Session: l.Displaced, At: now})
		}
		// What it sent behind a wait goes with it; the wait stays for
		// whoever takes the session over.
		f.run(0, &engine.Command{Kind: engine.KindDetach, Session: l.Session, At: now})
	default:
		f.run(0, &engine.Command{Kind: engine.KindClose, Session: l.Session, Keep: keep, At: now})
	}
}

// reapOrphans closes the orphans whose TTL has run out, in ref order.
func (f *FSM) reapOrphans(now timerwheel.Instant) {
	for _, sid := range f.eng.DueOrphans(now) {
		f.run(0, &engine.Command{Kind: engine.KindClose, Session: sid, At: now})
	}
}

// appendOrphans appends the engine's stable-ref state, in a fixed order,
// for snapshots and digests.
func appendOrphans(buf []byte, st engine.StableRefs) []byte {
	buf = binary.AppendVarint(buf, int64(st.TTL))
	buf = binary.AppendUvarint(buf, uint64(len(st.Refs)))
	for _, cr := range st.Refs {
		buf = binary.AppendUvarint(buf, cr.Conn)
		buf = appendBytes(buf, []byte(cr.Ref))
		buf = append(buf, byte(b2i(cr.Readopt)))
	}
	buf = binary.AppendUvarint(buf, uint64(len(st.Orphans)))
	for _, o := range st.Orphans {
		buf = appendBytes(buf, []byte(o.Ref))
		buf = binary.AppendUvarint(buf, uint64(o.Session))
		buf = binary.AppendVarint(buf, int64(o.Until))
	}
	return buf
}

// readOrphans decodes what appendOrphans wrote.
func (d *decoder) readOrphans() engine.StableRefs {
	st := engine.StableRefs{TTL: time.Duration(d.varint())}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		cr := engine.ConnRef{Conn: d.uvarint(), Ref: string(d.bytes())}
		cr.Readopt = d.byte() == 1
		st.Refs = append(st.Refs, cr)
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		o := engine.Orphan{Ref: string(d.bytes())}
		o.Session, o.Until = engine.SessionID(d.uvarint()), timerwheel.Instant(d.varint())
		st.Orphans = append(st.Orphans, o)
	}
	return st
}

// Orphans returns how many orphans wait to be taken over.
func (f *FSM) Orphans() int {
	f.entryMu.Lock()
	defer f.entryMu.Unlock()
	return f.Engine().Orphans()
}
