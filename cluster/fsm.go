package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Output receives what applying the log did to this node's own
// connections. Deliver is called on the FSM's goroutine, once per applied
// op that has something for them: conn is the local connection whose op
// it was (0 when the op was not from one of this node's connections, or
// is answered later) and r its result when hasReply; fx holds the
// effects on local connections, addressed by local connection number
// (engine.SessionID(conn)). The implementation writes the reply before
// the pushes of the same op (spec: a reply precedes the pushes it
// causes), and for a signal's reply (engine.KindReceivers) counts the
// receivers its delivery of fx reached.
type Output interface {
	Deliver(conn uint32, hasReply bool, r engine.Result, fx *engine.Effects)
	// Demoted is called when this node stops leading: every request of
	// its connections still waiting for a result will never get one
	// from this node and must be answered error_not_leader.
	Demoted()
}

// FSM is the replicated state: an engine fed only by the log. It maps the
// cluster's connection ids (epoch<<32 | the leader's local number) to
// engine sessions, opened on a connection's first request.
//
// Determinism: the FSM reads no clock and no randomness; time is the
// batches' stamps (the cluster clock, never going back) and every
// iteration over a map is sorted first.
type FSM struct {
	local engine.Config // each replica's own engine settings
	out   Output
	// deliverEpoch is the epoch this node leads (0: none): only its
	// connections are this node's to answer.
	deliverEpoch atomic.Uint64
	// deliverMu is held while results are handed to the output, so that
	// a demotion (which takes it to clear deliverEpoch) happens between
	// two deliveries, never during one: after it, nothing more arrives.
	deliverMu sync.Mutex

	// entryMu is held while an entry applies, so that Applied reads an
	// index and the state that entry left together.
	entryMu sync.Mutex
	// mu guards the fields below against readers outside the apply
	// goroutine (stats, digests, the leader's clock); apply holds it
	// for writing only to swap the engine and to update maps.
	mu     sync.RWMutex
	eng    *engine.Engine
	init   Init
	inited bool
	now    timerwheel.Instant // the cluster clock: the latest stamp applied
	epoch  uint64             // epochs promoted so far
	// Which session each connection has is the engine's
	// (engine/conns.go), as are the stable refs and orphans
	// (engine/stableref.go) and what a connection sent behind a request
	// that waits (engine/queue.go).
	//
	// index and term are those of the last entry applied (term: 0 until
	// an entry applies after a Restore).
	index, term uint64
	// members: the client addresses published through the log
	// (OpMember, members.go); guarded by mu.
	members map[raft.ServerID]string

	fx, tfx engine.Effects // apply's scratch
	res     engine.Result  // run's scratch: the Result of the command it runs
	ops     []Op           // the ops of the entry being applied (decodeBatch)
	// applied, if set, is called after each batch: a leader's proposer
	// looks at the engine's deadlines again.
	applied func()
}

// NewFSM returns an empty replica. local supplies the engine settings a
// replica chooses for itself (Shards, OnDeadline); the rest comes from
// the log's Init.
func NewFSM(local engine.Config, out Output) *FSM {
	return &FSM{local: local, out: out}
}

// Engine returns the current replica of the engine (nil before Init), for
// reads that do not change it (stats).
func (f *FSM) Engine() *engine.Engine {
	if f == nil {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.eng
}

// Now returns the cluster clock.
func (f *FSM) Now() timerwheel.Instant {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.now
}

// Inited reports whether the cluster's Init has been applied.
func (f *FSM) Inited() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.inited
}

// keepOps bounds the ops storage an FSM keeps from entry to entry.
const keepOps = 4096

// Apply applies one log entry.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch applies committed entries in order. A Promote entry's
// response is the epoch it started; others respond nil. An entry this
// replica cannot decode stops it: going on would diverge.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	res := make([]any, len(logs))
	for i, l := range logs {
		f.entryMu.Lock()
		if l.Type == raft.LogCommand {
			b, err := decodeBatch(l.Data, f.ops)
			if err != nil {
				panic(fmt.Sprintf("cluster: entry %d: %v (a replica must not skip what the others applied)", l.Index, err))
			}
			res[i] = f.applyBatch(&b)
			if clear(b.Ops); cap(b.Ops) <= keepOps { // what they point into is the entry's
				f.ops = b.Ops[:0]
			}
		}
		f.mu.Lock()
		f.index, f.term = l.Index, l.Term
		f.mu.Unlock()
		f.entryMu.Unlock()
	}
	if f.applied != nil {
		f.applied()
	}
	return res
}

func (f *FSM) applyBatch(b *Batch) any {
	f.mu.Lock()
	f.now = max(f.now, b.Stamp)
	f.mu.Unlock()
	now := f.now
	if f.eng != nil {
		// Time first: whatever fell due by the stamp fires before the
		// batch's requests, on every replica alike.
		f.run(0, &engine.Command{Kind: engine.KindAdvance, At: now})
		f.reapOrphans(now)
	}
	var resp any
	for i := range b.Ops {
		op := &b.Ops[i]
		switch op.Kind {
		case OpInit:
			if f.inited {
				continue // a second bootstrap's Init: the first one stands
			}
			cfg := op.Init.engineConfig(f.local)
			cfg.Start = now
			e := engine.New(cfg)
			f.mu.Lock()
			f.eng, f.init, f.inited = e, op.Init, true
			f.mu.Unlock()
		case OpPromote:
			if f.eng == nil {
				continue
			}
			f.mu.Lock()
			f.epoch++
			f.mu.Unlock()
			f.closeEarlierEpochs(now)
			resp = f.epoch
		case OpRequest:
			if f.eng == nil || op.Conn>>32 != f.epoch {
				continue // from an epoch already closed
			}
			f.request(op, now)
		case OpClose:
			f.closeConn(op.Conn, false, now)
		case OpOrphanTTL:
			if f.eng != nil { // the Init comes first (Node.promote)
				f.eng.SetOrphanTTL(op.TTL)
			}
		case OpCancel:
			if sid, ok := f.eng.ConnSession(op.Conn); ok {
				// Withdrawn, what it held back runs now (the engine's).
				f.run(op.Conn, &engine.Command{Kind: engine.KindCancel, Session: sid, Tag: op.Tag, At: now})
			}
		case OpMember:
			f.applyMember(&op.Member)
		case OpForceRelease:
			if f.eng == nil || op.Conn>>32 != f.epoch {
				// From an epoch already closed: as for a request, its
				// caller was told not_leader (Demoted), which must mean
				// that nothing was released.
				continue
			}
			c := op.Release.command(now)
			f.run(op.Conn, &c)
		case OpForeign:
			if f.eng == nil || op.Conn>>32 != f.epoch {
				continue // from an epoch already closed
			}
			f.foreign(op, now)
		case OpGC:
			if f.eng != nil {
				f.run(0, &engine.Command{Kind: engine.KindGC, At: now})
			}
		case OpFenceFloor:
			if f.eng != nil {
				f.eng.RaiseFence(op.Floor)
			}
		case OpTenant:
			f.tenant(op, now)
		}
	}
	return resp
}

// tenant applies an OpTenant: the tenant's bounds, and whose the
// connection's session is when the op names one of the current epoch (a
// connection of a closed epoch has no session to bind any more).
func (f *FSM) tenant(op *Op, now timerwheel.Instant) {
	if f.eng == nil {
		return
	}
	tb := &op.Tenant
	t := f.eng.TenantNamed(string(tb.Name))
	t.SetLimits(tb.Claims, tb.Waiting, tb.Keys)
	if uint32(op.Conn) != 0 && op.Conn>>32 == f.epoch {
		f.eng.SetTenant(f.session(op.Conn, now), t)
	}
}

// session returns conn's engine session, opening it on first use.
func (f *FSM) session(conn uint64, now timerwheel.Instant) engine.SessionID {
	if sid, ok := f.eng.ConnSession(conn); ok {
		return sid
	}
	var fx engine.Effects
	return f.eng.Apply(&engine.Command{Kind: engine.KindOpen, ConnID: conn, At: now}, &fx).Session
}

// closeEarlierEpochs ends the sessions of connections of earlier
// leaderships, in connection order: their waits are cancelled, their
// holds stay until their leases end (renewable by token from anywhere).
func (f *FSM) closeEarlierEpochs(now timerwheel.Instant) {
	var old []uint64
	for _, cs := range f.eng.ConnSessions() {
		if cs.Conn>>32 != f.epoch {
			old = append(old, cs.Conn)
		}
	}
	for _, cr := range f.eng.StableRefs().Refs {
		if _, ok := f.eng.ConnSession(cr.Conn); !ok && cr.Conn>>32 != f.epoch {
			old = append(old, cr.Conn) // a ref, and nothing else yet
		}
	}
	slices.Sort(old)
	for _, c := range old {
		f.closeConn(c, true, now)
	}
}

// run applies one command and hands its outcome to the output: the reply
// when conn (the command's connection, 0 for none) is this node's, and
// the effects addressed to this node's connections (late replies, those
// of requests that ran from a session's queue among them). The refs that
// stable-refs handed back are kept first, on every replica.
func (f *FSM) run(conn uint64, c *engine.Command) {
	f.fx.Reset()
	r := &f.res
	f.eng.ApplyTo(c, &f.fx, r)
	if r.Kind == engine.KindStableRef {
		f.keepRef(conn, r)
	}
	for i := range f.fx.List {
		if e := &f.fx.List[i]; e.Result.Kind == engine.KindStableRef {
			c, _ := f.eng.ConnOf(e.To)
			f.keepRef(c, &e.Result)
		}
	}
	f.deliverAnswer(conn, r, foreignKind(c.Kind))
}

// deliver hands a command's reply (for connection conn) and its effects
// to the output, translated to this node's connection numbers.
func (f *FSM) deliver(conn uint64, rp *engine.Result) { f.deliverAnswer(conn, rp, false) }

// deliverAnswer is deliver, for a foreign command's reply when foreign:
// its session is owed an answer for every command, so that it can tell
// them from late grants (engine.KindAnswer marks them), a tagged acquire
// that waits included (Blocked now, its grant later).
func (f *FSM) deliverAnswer(conn uint64, rp *engine.Result, foreign bool) {
	f.deliverMu.Lock()
	defer f.deliverMu.Unlock()
	mine := f.deliverEpoch.Load()
	if mine == 0 {
		return // a follower answers nobody
	}
	r := *rp
	if foreign {
		r.Kind = engine.KindAnswer
	}
	local := uint32(0)
	if conn>>32 == mine && conn != 0 {
		local = uint32(conn)
	}
	hasReply := local != 0 && (!r.Blocked || foreign)
	f.tfx.Reset()
	// ans is the translated late reply of a request run from its
	// session's queue, left how many effects after it that request
	// caused: its Caused counts those this node delivers.
	ans, left := -1, 0
	for _, e := range f.fx.List {
		caused := e.Caused
		counted := left > 0 && ans >= 0
		left = max(left-1, 0)
		to, ok := f.localID(e.To, mine)
		if caused > 0 {
			ans, left = -1, caused
			if ok {
				ans = len(f.tfx.List)
			}
		}
		if !ok {
			continue
		}
		if counted {
			f.tfx.List[ans].Caused++
		}
		e.To, e.Caused = to, 0
		if e.Group != nil {
			g := make([]engine.SessionID, 0, len(e.Group))
			for i := range e.Group {
				if m, ok := f.localID(e.Member(i), mine); ok {
					g = append(g, m)
				}
			}
			e.Group, e.Start = g, 0
		}
		f.tfx.List = append(f.tfx.List, e)
	}
	if hasReply || len(f.tfx.List) > 0 {
		f.out.Deliver(local, hasReply, r, &f.tfx)
	}
}

// localID turns an engine session into this node's connection number, if
// the session is one of its connections in epoch mine.
func (f *FSM) localID(sid engine.SessionID, mine uint64) (engine.SessionID, bool) {
	c, ok := f.eng.ConnOf(sid)
	if !ok || c>>32 != mine {
		return 0, false
	}
	return engine.SessionID(uint32(c)), true
}

// Digest is a hash of the whole replicated state: equal on every replica
// that applied the same entries.
func (f *FSM) Digest() [sha256.Size]byte {
	_, d := f.Applied()
	return d
}

// Applied returns the index of the last entry applied and the digest of
// the state it left, read together.
func (f *FSM) Applied() (uint64, [sha256.Size]byte) {
	f.entryMu.Lock()
	defer f.entryMu.Unlock()
	return f.appliedLocked()
}

// appliedLocked is Applied, with entryMu held.
func (f *FSM) appliedLocked() (uint64, [sha256.Size]byte) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	h := sha256.New()
	var buf []byte
	buf = binary.AppendVarint(buf, int64(f.now))
	buf = binary.AppendUvarint(buf, f.epoch)
	buf = appendConns(buf, f.eng)
	buf = appendOrphans(buf, f.eng.StableRefs())
	if len(f.members) > 0 {
		buf = appendMembers(buf, f.members)
	}
	if f.eng != nil {
		d := f.eng.Digest()
		buf = append(buf, d[:]...)
	}
	h.Write(buf)
	return f.index, [sha256.Size]byte(h.Sum(nil))
}

// appendConns appends the connections of e (nil: none) and their
// sessions, by connection number, for snapshots and digests.
func appendConns(buf []byte, e *engine.Engine) []byte {
	conns := e.ConnSessions()
	buf = binary.AppendUvarint(buf, uint64(len(conns)))
	for _, cs := range conns {
		buf = binary.AppendUvarint(buf, cs.Conn)
		buf = binary.AppendUvarint(buf, uint64(cs.Session))
	}
	return buf
}

// snapMagic starts an FSM snapshot: then the cluster clock, the epoch,
// the index of the last entry applied, the Init (as an op), the
// connection map, the stable-ref state, the members' client addresses
// (members.go) and the engine's snapshot, whose sessions carry what
// their connections sent behind a wait (engine/queue.go). Earlier
// formats are read too: snapMagicV3 and snapMagicV2 have a section of
// parked connections after the connection map, each with the requests
// it sent behind its wait (the FSM kept them then), which Restore hands
// to the engine's queues; snapMagicV1 has neither the index nor parked
// connections (its sessions had one request in the log at a time), and
// neither it nor snapMagicV2 the stable-ref state or the members.
const (
	snapMagic   = "DFLKCLU\x04"
	snapMagicV3 = "DFLKCLU\x03"
	snapMagicV2 = "DFLKCLU\x02"
	snapMagicV1 = "DFLKCLU\x01"
)

// Snapshot captures the state on the apply goroutine (no apply runs
// meanwhile); Persist writes the captured bytes while applies go on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	buf := []byte(snapMagic)
	buf = binary.AppendVarint(buf, int64(f.now))
	buf = binary.AppendUvarint(buf, f.epoch)
	buf = binary.AppendUvarint(buf, f.index)
	if !f.inited {
		return sealed(append(buf, 0)), nil
	}
	buf = append(buf, 1)
	buf = appendOp(buf, &Op{Kind: OpInit, Init: f.init})
	buf = appendConns(buf, f.eng)
	buf = appendOrphans(buf, f.eng.StableRefs())
	buf = appendMembers(buf, f.members)
	var w bytes.Buffer
	w.Write(buf)
	if err := f.eng.Snapshot(&w); err != nil {
		return nil, err
	}
	return sealed(w.Bytes()), nil
}

// sealed appends the CRC-32C of a snapshot's bytes (formats from
// snapMagic on), so that damage anywhere is refused, not restored.
func sealed(b []byte) snapshot {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	v1 := bytes.HasPrefix(data, []byte(snapMagicV1))
	v2 := bytes.HasPrefix(data, []byte(snapMagicV2))
	v3 := bytes.HasPrefix(data, []byte(snapMagicV3))
	if !v1 && !v2 && !v3 && !bytes.HasPrefix(data, []byte(snapMagic)) {
		return fmt.Errorf("cluster: not a snapshot of this format")
	}
	if !v1 && !v2 {
		n := len(data) - 4
		if n < len(snapMagic) || binary.BigEndian.Uint32(data[n:]) != crc32.Checksum(data[:n], crcTable) {
			return fmt.Errorf("cluster: snapshot: checksum mismatch")
		}
		data = data[:n]
	}
	st := &FSM{}
	var refs engine.StableRefs
	d := decoder{b: data[len(snapMagic):]}
	now := timerwheel.Instant(d.varint())
	epoch := d.uvarint()
	var index uint64
	if !v1 {
		index = d.uvarint()
	}
	inited := d.byte() == 1
	var init Init
	conns := make(map[uint64]engine.SessionID)
	var parked []parkedConn // formats V2 and V3
	var eng *engine.Engine
	if inited {
		op := d.op()
		if op.Kind != OpInit {
			d.fail("init")
		}
		init = op.Init
		n := d.uvarint()
		for i := uint64(0); i < n && d.err == nil; i++ {
			c, sid := d.uvarint(), engine.SessionID(d.uvarint())
			conns[c] = sid
		}
		if v2 || v3 {
			parked = d.parked()
		}
		if !v1 && !v2 {
			refs = d.readOrphans()
			st.members = d.members()
		}
		if d.err != nil {
			return fmt.Errorf("cluster: snapshot: %w", d.err)
		}
		cfg := init.engineConfig(f.local)
		cfg.Start = now
		if eng, err = engine.Restore(cfg, bytes.NewReader(d.b)); err != nil {
			return fmt.Errorf("cluster: snapshot: %w", err)
		}
		for c, sid := range conns {
			if _, open := eng.SessionConn(sid); !open {
				return fmt.Errorf("cluster: snapshot: connection %#x has session %#x, which is not open", c, uint64(sid))
			}
			if other, ok := eng.ConnOf(sid); ok {
				return fmt.Errorf("cluster: snapshot: connections %#x and %#x have one session", other, c)
			}
			eng.Attach(c, sid)
		}
		for _, o := range refs.Orphans {
			if _, open := eng.SessionConn(o.Session); !open {
				return fmt.Errorf("cluster: snapshot: the orphan of %q is session %#x, which is not open", o.Ref, uint64(o.Session))
			}
		}
		eng.SetStableRefs(refs)
		if v2 || v3 {
			if err := requeue(eng, parked, conns, now); err != nil {
				return fmt.Errorf("cluster: snapshot: %w", err)
			}
		}
	} else if d.err != nil || len(d.b) != 0 {
		return fmt.Errorf("cluster: snapshot: damaged header")
	}
	f.mu.Lock()
	f.eng, f.init, f.inited, f.now, f.epoch = eng, init, inited, now, epoch
	f.index = index
	f.members = st.members
	f.mu.Unlock()
	return nil
}
