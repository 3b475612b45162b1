package cluster

import (
	"encoding/binary"
	"slices"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Stable refs and orphans (spec §G): a connection that presented
// `stable-ref <ref>` and closes while the orphan TTL (--orphan-ttl of the
// leader, replicated by OpOrphanTTL) is on leaves its engine session
// behind as an orphan: its holds and queue places stay. A new connection
// whose first request is `stable-ref <ref>` takes that session over, and
// its acquires of keys the session still holds or waits on get the held
// token or the place in the queue back (engine.Command.Readopt). Orphans
// nobody took over within the TTL are closed like any connection. This
// applies to a connection of this leadership that closed (EOF, error,
// timeout alike: the member cannot tell a crashed client from a
// graceful one) and to the connections of a previous leader.

// orphan is a session left by a closed connection with a stable ref.
type orphan struct {
	sid   engine.SessionID
	until timerwheel.Instant // reaped at the first batch stamped at or after
}

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
			f.stableRef(op.Conn, string(op.Req.Token), now)
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
		Readopt: f.readopt[op.Conn]})
}

// keepRef records the ref a stable-ref of conn handed back through the
// engine (engine.KindStableRef) and makes r its plain ok. conn has a
// session, so it takes no orphan over.
func (f *FSM) keepRef(conn uint64, r *engine.Result) {
	f.refs[conn] = r.Value
	r.Kind, r.Value = engine.KindStatus, ""
}

// stableRef records conn's ref and, if conn has no session yet and an
// orphan has that ref, makes the orphan conn's session (connected now).
func (f *FSM) stableRef(conn uint64, ref string, now timerwheel.Instant) {
	f.refs[conn] = ref
	if o, ok := f.orphans[ref]; ok {
		if _, busy := f.eng.ConnSession(conn); !busy {
			delete(f.orphans, ref)
			f.readopt[conn] = true
			f.eng.Rebind(o.sid, conn, now.Tick()) // conn's session now
		}
	}
	f.fx.Reset()
	f.deliver(conn, &engine.Result{Status: vocab.StatusOK})
}

// closeConn ends connection conn: its session becomes an orphan if it has
// a ref and orphans are on, else it is closed (keep: holds stay until
// their leases end, as for a previous leader's connections).
func (f *FSM) closeConn(conn uint64, keep bool, now timerwheel.Instant) {
	ref := f.refs[conn]
	delete(f.refs, conn)
	delete(f.readopt, conn)
	sid, ok := f.eng.ConnSession(conn)
	// A connection whose peer went away may wait for this close to end
	// (session.Session.PeerClosed): tell it.
	f.fx.Reset()
	f.deliver(conn, &engine.Result{Kind: engine.KindGone})
	if !ok {
		return
	}
	// The engine's close or detach parts the session from conn (nothing
	// more goes to conn) and drops what it queued.
	if ref != "" && f.orphanTTL > 0 {
		if old, ok := f.orphans[ref]; ok {
			// Two connections presented the ref: the older orphan goes.
			f.run(0, &engine.Command{Kind: engine.KindClose, Session: old.sid, At: now})
		}
		f.orphans[ref] = orphan{sid: sid, until: now + timerwheel.Instant(f.orphanTTL)}
		// What it sent behind a wait goes with it; the wait stays for
		// whoever takes the session over.
		f.run(0, &engine.Command{Kind: engine.KindDetach, Session: sid, At: now})
		return
	}
	f.run(0, &engine.Command{Kind: engine.KindClose, Session: sid, Keep: keep, At: now})
}

// reapOrphans closes the orphans whose TTL has run out, in ref order.
func (f *FSM) reapOrphans(now timerwheel.Instant) {
	if len(f.orphans) == 0 {
		return
	}
	var due []string
	for ref, o := range f.orphans {
		if now >= o.until {
			due = append(due, ref)
		}
	}
	slices.Sort(due)
	for _, ref := range due {
		sid := f.orphans[ref].sid
		delete(f.orphans, ref)
		f.run(0, &engine.Command{Kind: engine.KindClose, Session: sid, At: now})
	}
}

// appendOrphans appends the stable-ref state, in a fixed order, for
// snapshots and digests.
func (f *FSM) appendOrphans(buf []byte) []byte {
	buf = binary.AppendVarint(buf, int64(f.orphanTTL))
	conns := make([]uint64, 0, len(f.refs))
	for c := range f.refs {
		conns = append(conns, c)
	}
	slices.Sort(conns)
	buf = binary.AppendUvarint(buf, uint64(len(conns)))
	for _, c := range conns {
		buf = binary.AppendUvarint(buf, c)
		buf = appendBytes(buf, []byte(f.refs[c]))
		buf = append(buf, byte(b2i(f.readopt[c])))
	}
	refs := make([]string, 0, len(f.orphans))
	for r := range f.orphans {
		refs = append(refs, r)
	}
	slices.Sort(refs)
	buf = binary.AppendUvarint(buf, uint64(len(refs)))
	for _, r := range refs {
		o := f.orphans[r]
		buf = appendBytes(buf, []byte(r))
		buf = binary.AppendUvarint(buf, uint64(o.sid))
		buf = binary.AppendVarint(buf, int64(o.until))
	}
	return buf
}

// readOrphans decodes what appendOrphans wrote into f's (empty) maps.
func (f *FSM) readOrphans(d *decoder) {
	f.orphanTTL = time.Duration(d.varint())
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		c := d.uvarint()
		f.refs[c] = string(d.bytes())
		if d.byte() == 1 {
			f.readopt[c] = true
		}
	}
	for n := d.uvarint(); n > 0 && d.err == nil; n-- {
		r := string(d.bytes())
		f.orphans[r] = orphan{sid: engine.SessionID(d.uvarint()), until: timerwheel.Instant(d.varint())}
	}
}

// Orphans returns how many orphans wait to be taken over.
func (f *FSM) Orphans() int {
	f.entryMu.Lock()
	defer f.entryMu.Unlock()
	return len(f.orphans)
}
