package engine

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// A snapshot is the engine's whole state as bytes, for a replicated log
// to be compacted (a raft snapshot) and for a replica to catch up:
// Restore builds an engine that goes on exactly as the snapshotted one
// would, given the same commands. It holds what Digest covers and what
// decides future results beyond it: the session table (so new sessions
// get the same ids), each session's claims in the order they were made
// (a close releases in that order, and fences follow it), two-phase
// states, parked pops and barrier waits, the requests queued behind a
// session's wait (queue.go), queue-group turns, armed timers
// and the deadlines that fired timers keep. It leaves out the shard
// layout (records go to the shards of the restoring engine's count),
// free lists, generation stamps and event counts.
//
// The format is ours and versioned: a magic, sections of records in a
// fixed order (keys sorted), and a CRC-32C of everything before it.
// Snapshot must not run concurrently with Apply or Advance (a raft FSM
// snapshots on its apply goroutine).

// snapMagicV1 is the format before sessions had queues (queue.go): its
// sessions have none. snapMagicTail is snapMagic with a last section
// (snapWriter.tail): the tenants (tenant.go), with which sessions and
// keys are whose, and the closed sessions whose holds are kept until
// their leases end (a cluster's failover closes the earlier epoch's
// sessions so). It is written only by an engine that has either, so one
// without writes what releases before it read; format 2 has no way to
// name a closed session, and such an engine's format-2 snapshot could
// not be restored.
const (
	snapMagic     = "DFLKENG\x02"
	snapMagicV1   = "DFLKENG\x01"
	snapMagicTail = "DFLKENG\x03"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is returned by Restore for bytes that are not a
// snapshot of this format, or are damaged.
var ErrBadSnapshot = errors.New("engine: not a valid snapshot")

// Snapshot writes the engine's state to w.
func (e *Engine) Snapshot(w io.Writer) error {
	sw := &snapWriter{w: bufio.NewWriter(w)}
	tenants, closed := e.sortedTenants(), e.closedHolders()
	tail := len(tenants) > 0 || len(closed) > 0
	if tail {
		sw.raw([]byte(snapMagicTail))
	} else {
		sw.raw([]byte(snapMagic))
	}
	sw.u(e.fence.Load())
	sw.bool(e.draining.Load())

	// Sessions.
	t := &e.sessions
	t.mu.Lock()
	gens := slices.Clone(t.mu.gens)
	free := slices.Clone(t.mu.free)
	conns := t.mu.conns
	t.mu.Unlock()
	sw.u(uint64(len(gens)))
	for _, g := range gens {
		sw.u(uint64(g))
	}
	sw.u(uint64(len(free)))
	for _, f := range free {
		sw.u(uint64(f))
	}
	sw.u(conns)
	var live []*session
	for idx := range gens {
		if s := t.chunk(uint32(idx))[idx%chunkSize].Load(); s != nil {
			live = append(live, s)
		}
	}
	sw.u(uint64(len(live)))
	for _, s := range live {
		sw.u(uint64(uint32(s.id)))
		sw.u(s.connID.Load())
		for ns := range numNamespaces {
			sw.u(uint64(s.enqSweep[ns]))
		}
		sw.s(string(s.queue))
		sw.bool(s.waits)
	}

	// Resources and their slots; slots are numbered as they are written.
	ids := make(map[*slot]uint64)
	slotOut := func(sh *shard, sl *slot) {
		ids[sl] = uint64(len(ids)) + 1
		sw.slot(sl, sh.leaseOf(sl), sh.tagOf(sl))
	}
	type resRec struct {
		ns namespace
		r  *resource
		sh *shard
	}
	type lapsedRec struct {
		sl *slot
		sh *shard
	}
	var res []resRec
	var lapsed []lapsedRec
	for i := range e.shards {
		sh := &e.shards[i]
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				res = append(res, resRec{namespace(ns), r, sh})
			}
		}
		for sl := sh.lapsed.head; sl != nil; sl = sl.next {
			lapsed = append(lapsed, lapsedRec{sl, sh})
		}
	}
	slices.SortFunc(res, func(a, b resRec) int {
		return cmp.Or(cmp.Compare(a.ns, b.ns), strings.Compare(a.r.key(), b.r.key()))
	})
	sw.u(uint64(len(res)))
	for _, rr := range res {
		r := rr.r
		sw.u(uint64(rr.ns))
		sw.s(r.key())
		sw.i(int64(r.limit))
		sw.bool(r.isRW())
		sw.i(int64(r.lastActive))
		for _, l := range rr.sh.runs(r) {
			sw.u(uint64(l.n))
			for sl := l.head; sl != nil; sl = sl.next {
				slotOut(rr.sh, sl)
			}
		}
	}
	// A two-phase lapsed grant is one per (key, session); rf expired
	// grants have no session and differ by fence.
	sessID := func(sl *slot) SessionID {
		if sl.sess == nil {
			return 0
		}
		return sl.sess.id
	}
	slices.SortFunc(lapsed, func(x, y lapsedRec) int {
		a, b := x.sl, y.sl
		return cmp.Or(cmp.Compare(a.res.namespace(), b.res.namespace()), strings.Compare(a.res.key(), b.res.key()),
			cmp.Compare(sessID(a), sessID(b)), cmp.Compare(a.fence, b.fence))
	})
	sw.u(uint64(len(lapsed)))
	for _, l := range lapsed {
		sw.u(uint64(l.sl.res.namespace()))
		sw.s(l.sl.res.key())
		slotOut(l.sh, l.sl)
	}

	// Each session's live claims in order, its two-phase states, and the
	// elections it is registered on.
	for _, s := range live {
		var claims []uint64
		for i := range s.claims.nchunks() {
			cs := s.claims.chunk(i)
			for _, c := range cs {
				if c.live() && c.sl.sess == s {
					if id, ok := ids[c.sl]; ok {
						claims = append(claims, id)
					}
				}
			}
		}
		sw.u(uint64(len(claims)))
		for _, id := range claims {
			sw.u(id)
		}
		for ns := range numNamespaces {
			keys := make([]string, 0, len(s.enq[ns]))
			for k, c := range s.enq[ns] {
				if c.live() && c.sl.sess == s && ids[c.sl] != 0 {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			sw.u(uint64(len(keys)))
			for _, k := range keys {
				sw.s(k)
				sw.u(ids[s.enq[ns][k].sl])
			}
		}
	}

	// The redis-feats primitives.
	var ctrs, kvs, lists, bars, els []string
	for i := range e.shards {
		sh := &e.shards[i]
		for k := range sh.counters {
			ctrs = append(ctrs, k)
		}
		for k := range sh.kv {
			kvs = append(kvs, k)
		}
		for k := range sh.lists {
			lists = append(lists, k)
		}
		for k := range sh.barriers {
			bars = append(bars, k)
		}
		for k := range sh.elections {
			els = append(els, k)
		}
	}
	for _, keys := range [][]string{ctrs, kvs, lists, bars, els} {
		slices.Sort(keys)
	}
	sw.u(uint64(len(ctrs)))
	for _, k := range ctrs {
		c := e.shardFor([]byte(k)).counters[k]
		sw.s(k)
		sw.i(c.value)
		sw.i(int64(c.lastActive))
	}
	sw.u(uint64(len(kvs)))
	for _, k := range kvs {
		kv := e.shardFor([]byte(k)).kv[k]
		sw.s(k)
		sw.s(kv.value)
		sw.bool(kv.hasTTL)
		sw.timer(&kv.timer)
		sw.i(int64(kv.lastActive))
		sw.u(uint64(kv.ver))
	}
	sw.u(uint64(len(lists)))
	for _, k := range lists {
		l := e.shardFor([]byte(k)).lists[k]
		sw.s(k)
		sw.u(uint64(l.len()))
		for _, v := range l.items[l.head:] {
			sw.s(v)
		}
		sw.i(int64(l.lastActive))
		sw.u(uint64(l.waiters.n))
		for w := l.waiters.head; w != nil; w = w.ln.next {
			sw.u(uint64(w.sess.id))
			sw.s(w.op)
			sw.timer(&w.timer)
		}
	}
	sw.u(uint64(len(bars)))
	for _, k := range bars {
		b := e.shardFor([]byte(k)).barriers[k]
		sw.s(k)
		sw.i(int64(b.count))
		sw.i(int64(b.lastActive))
		sw.u(uint64(b.parts.n))
		for w := b.parts.head; w != nil; w = w.ln.next {
			sw.u(uint64(w.sess.id))
			sw.timer(&w.timer)
		}
	}
	sw.u(uint64(len(els)))
	for _, k := range els {
		el := e.shardFor([]byte(k)).elections[k]
		sw.s(k)
		sw.u(uint64(len(el.watchers)))
		for _, w := range el.watchers {
			sw.u(uint64(w.sess.id))
			sw.bool(w.observer)
			sw.bool(w.holder)
		}
	}
	for _, l := range []*Sublist{e.subs, e.watches} {
		pats := l.snapshotPatterns()
		sw.u(uint64(len(pats)))
		for _, p := range pats {
			sw.s(p.pattern)
			sw.u(uint64(len(p.subs)))
			for _, s := range p.subs {
				sw.u(uint64(s))
			}
			sw.u(uint64(len(p.queues)))
			for _, q := range p.queues {
				sw.s(q.name)
				sw.u(q.next)
				sw.u(uint64(len(q.members)))
				for _, s := range q.members {
					sw.u(uint64(s))
				}
			}
		}
	}
	if tail {
		sw.tail(e, tenants, closed, live, ctrs, kvs, lists)
	}
	return sw.finish()
}

// closedHolders lists the closed sessions that still own slots (holds
// kept until their leases end, engine.Command.Keep), by id.
func (e *Engine) closedHolders() []*session {
	seen := make(map[*session]bool)
	var out []*session
	note := func(sl *slot) {
		if s := sl.sess; s != nil && !seen[s] && e.sessions.get(s.id) != s {
			seen[s] = true
			out = append(out, s)
		}
	}
	for i := range e.shards {
		sh := &e.shards[i]
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				for _, l := range sh.runs(r) {
					for sl := l.head; sl != nil; sl = sl.next {
						note(sl)
					}
				}
			}
		}
		for sl := sh.lapsed.head; sl != nil; sl = sl.next {
			note(sl)
		}
	}
	slices.SortFunc(out, func(a, b *session) int { return cmp.Compare(a.id, b.id) })
	return out
}

// tail writes the last section of format 3: each tenant's name, bounds
// and counts; the tenant of each live session and of each counter, KV
// entry and list, in the order they were written (0: none, else the
// tenant's place in the list plus one); then the closed sessions that
// slots name (closedHolders), each with its connection number and
// tenant. The counts are written, not recounted on restore: they are
// what the slots' states and the keys added up to.
func (sw *snapWriter) tail(e *Engine, tenants []*Tenant, closed, live []*session, ctrs, kvs, lists []string) {
	place := make(map[*Tenant]uint64, len(tenants))
	sw.u(uint64(len(tenants)))
	for i, t := range tenants {
		place[t] = uint64(i) + 1
		sw.s(t.name)
		mc, mw, mk := t.Limits()
		c, w, k := t.Usage()
		for _, v := range []int64{mc, mw, mk, c, w, k} {
			sw.i(v)
		}
	}
	for _, s := range live {
		sw.u(place[s.tenant])
	}
	for _, k := range ctrs {
		sw.u(place[e.shardFor([]byte(k)).counters[k].tenant])
	}
	for _, k := range kvs {
		sw.u(place[e.shardFor([]byte(k)).kv[k].tenant])
	}
	for _, k := range lists {
		sw.u(place[e.shardFor([]byte(k)).lists[k].tenant])
	}
	sw.u(uint64(len(closed)))
	for _, s := range closed {
		sw.u(uint64(s.id))
		sw.u(s.connID.Load())
		sw.u(place[s.tenant])
	}
}

// Restore builds an engine configured by cfg in the state a snapshot
// holds. cfg must match the snapshotted engine's in what decides results
// (profile, limits, leases, TokenKey); its Shards may differ. Restore arms
// the timers the snapshot holds, telling cfg.OnDeadline as usual.
func Restore(cfg Config, r io.Reader) (e *Engine, err error) {
	sr := &snapReader{r: bufio.NewReader(r)}
	defer func() {
		// A damaged snapshot may reference what does not exist; report
		// it rather than crash the replica that reads it.
		if p := recover(); p != nil {
			e, err = nil, fmt.Errorf("%w: %v", ErrBadSnapshot, p)
		}
	}()
	magic := sr.raw(len(snapMagic))
	v1 := string(magic) == snapMagicV1
	withTail := string(magic) == snapMagicTail
	if sr.err == nil && string(magic) != snapMagic && !v1 && !withTail {
		return nil, fmt.Errorf("%w: bad magic", ErrBadSnapshot)
	}
	e = New(cfg)
	e.fence.Store(sr.u())
	e.draining.Store(sr.bool())

	t := &e.sessions
	gens := make([]uint32, sr.count())
	for i := range gens {
		gens[i] = uint32(sr.u())
	}
	free := make([]uint32, sr.count())
	for i := range free {
		free[i] = uint32(sr.u())
	}
	t.mu.gens, t.mu.free, t.mu.conns = gens, free, sr.u()
	for range (len(gens) + chunkSize - 1) / chunkSize {
		t.growLocked()
	}
	live := make([]*session, sr.count())
	for i := range live {
		idx := uint32(sr.u())
		s := &session{id: SessionID(uint64(gens[idx])<<32 | uint64(idx))}
		s.connID.Store(sr.u())
		for ns := range numNamespaces {
			s.enqSweep[ns] = int(sr.u())
		}
		if v1 {
			// Whether its last request still waits is found out when
			// the next one comes (queue.go): assume it may.
			s.waits = true
		} else {
			if q := sr.raw(sr.count()); len(q) > 0 {
				s.queue = q
			}
			s.waits = sr.bool()
		}
		t.chunk(idx)[idx%chunkSize].Store(s)
		live[i] = s
	}
	// closed holds the closed sessions slots name (format 3 lists them in
	// its tail, which fills them in and checks that none is missing).
	closed := make(map[uint64]*session)
	sess := func(id uint64) *session {
		if id == 0 {
			return nil
		}
		s := t.get(SessionID(id))
		if s == nil {
			// A closed session that slots still name: format 3 lists
			// them in its tail; format 2 had no way to, and such a
			// snapshot (taken within a lease of a cluster's failover)
			// restores them with what it knew, their ids.
			if s = closed[id]; s == nil {
				s = &session{id: SessionID(id)}
				closed[id] = s
			}
		}
		return s
	}
	live2 := func(id uint64) *session { // what only an open session does
		s := sess(id)
		if closed[id] == s && s != nil {
			panic(fmt.Sprintf("session %#x is closed", id))
		}
		return s
	}

	slots := []*slot{nil}     // by number; 0 is none
	slotShards := []uint16{0} // the shard of each
	slotIn := func(sh *shard, r *resource) *slot {
		sl := sh.newSlotLocked(r, nil)
		sl.set(flagUntimed, true) // the format has no start times (latency.go)
		if sr.slot(sh, sl, sess) {
			sh.armLocked(&sl.timer, sl.timer.Deadline())
		}
		slots = append(slots, sl)
		slotShards = append(slotShards, uint16(sh.index))
		return sl
	}
	for range sr.count() {
		ns := namespace(sr.u())
		key := sr.s()
		sh := e.shardFor([]byte(key))
		limit, rw := int32(sr.i()), sr.bool()
		r := newResource(key, ns, limit, rw, timerwheel.Tick(sr.i()))
		sh.res[ns].put(r)
		e.keys.Add(1)
		for range sr.count() {
			r.pushHolder(slotIn(sh, r))
		}
		for range sr.count() {
			sh.pushWaiterLocked(r, slotIn(sh, r))
		}
	}
	for range sr.count() {
		ns := namespace(sr.u())
		key := sr.s()
		sh := e.shardFor([]byte(key))
		r := sh.res[ns].getString(key)
		if r == nil {
			panic("lapsed grant of a key that is not in the snapshot")
		}
		sh.lapseLocked(slotIn(sh, r))
	}
	slotRef := func() claim {
		n := sr.u()
		if n == 0 || n >= uint64(len(slots)) {
			panic(fmt.Sprintf("reference to slot %d of %d", n, len(slots)-1))
		}
		sl := slots[n]
		return claim{sl: sl, gen: sl.gen.Load(), shard: slotShards[n]}
	}
	for _, s := range live {
		for range sr.count() {
			s.claims.push(slotRef())
		}
		for ns := range numNamespaces {
			for range sr.count() {
				k := sr.s()
				c := slotRef()
				if s.enq[ns] == nil {
					s.enq[ns] = make(map[string]claim)
				}
				s.enq[ns][k] = c
			}
		}
	}

	// The keys in the order written, for the tenants section.
	var ctrs []*counter
	var kvs []*kvEntry
	var lists []*list
	for range sr.count() {
		k := sr.s()
		c := &counter{value: sr.i(), lastActive: timerwheel.Tick(sr.i())}
		e.shardFor([]byte(k)).counters[k] = c
		ctrs = append(ctrs, c)
		e.rfKeys.Add(1)
	}
	for range sr.count() {
		k := sr.s()
		sh := e.shardFor([]byte(k))
		kv := &kvEntry{key: k, value: sr.s(), hasTTL: sr.bool()}
		kv.timer.Kind = timerKV
		if sr.timer(&kv.timer) {
			sh.armLocked(&kv.timer, kv.timer.Deadline())
		}
		kv.lastActive, kv.ver = timerwheel.Tick(sr.i()), uint32(sr.u())
		sh.kv[k] = kv
		kvs = append(kvs, kv)
		e.rfKeys.Add(1)
	}
	for range sr.count() {
		k := sr.s()
		sh := e.shardFor([]byte(k))
		l := &list{key: k, items: make([]string, sr.count())}
		for i := range l.items {
			l.items[i] = sr.s()
		}
		l.lastActive = timerwheel.Tick(sr.i())
		for range sr.count() {
			w := &popWaiter{sh: sh, l: l, sess: live2(sr.u()), op: sr.s()}
			w.timer.Kind = timerPop
			if sr.timer(&w.timer) {
				sh.armLocked(&w.timer, w.timer.Deadline())
			}
			l.waiters.pushBack(w)
			w.sess.pop = w
		}
		sh.lists[k] = l
		lists = append(lists, l)
		e.rfKeys.Add(1)
	}
	for range sr.count() {
		k := sr.s()
		sh := e.shardFor([]byte(k))
		b := &barrier{key: k, count: int(sr.i()), lastActive: timerwheel.Tick(sr.i())}
		for range sr.count() {
			w := &barrierWaiter{sh: sh, b: b, sess: live2(sr.u())}
			w.timer.Kind = timerBarrier
			if sr.timer(&w.timer) {
				sh.armLocked(&w.timer, w.timer.Deadline())
			}
			b.parts.pushBack(w)
			w.sess.bar = w
		}
		sh.barriers[k] = b
		e.rfKeys.Add(1)
	}
	for range sr.count() {
		k := sr.s()
		sh := e.shardFor([]byte(k))
		el := &election{}
		for range sr.count() {
			w := leaderWatcher{sess: live2(sr.u()), observer: sr.bool(), holder: sr.bool()}
			w.sess.elections.add(k)
			el.watchers = append(el.watchers, w)
		}
		sh.elections[k] = el
	}
	for _, l := range []*Sublist{e.subs, e.watches} {
		for range sr.count() {
			pattern := sr.s()
			for range sr.count() {
				if _, err := l.Subscribe(live2(sr.u()).id, pattern, ""); err != nil {
					panic(err)
				}
			}
			for range sr.count() {
				name, next := sr.s(), sr.u()
				for range sr.count() {
					if _, err := l.Subscribe(live2(sr.u()).id, pattern, name); err != nil {
						panic(err)
					}
				}
				l.setQueueTurn(pattern, name, next)
			}
		}
	}
	if withTail {
		sr.tail(e, live, closed, ctrs, kvs, lists)
	}
	if err := sr.finish(); err != nil {
		return nil, err
	}
	return e, nil
}

// tail reads format 3's last section (snapWriter.tail) into e.
func (r *snapReader) tail(e *Engine, live []*session, closed map[uint64]*session, ctrs []*counter, kvs []*kvEntry, lists []*list) {
	ts := make([]*Tenant, r.count())
	for i := range ts {
		name := r.s()
		if r.err != nil {
			return
		}
		t := e.TenantNamed(name)
		t.SetLimits(r.i(), r.i(), r.i())
		t.claims.Store(r.i())
		t.waiting.Store(r.i())
		t.keys.Store(r.i())
		ts[i] = t
	}
	of := func() *Tenant {
		n := r.u()
		if n > uint64(len(ts)) {
			panic(fmt.Sprintf("reference to tenant %d of %d", n, len(ts)))
		}
		if n == 0 {
			return nil
		}
		return ts[n-1]
	}
	for _, s := range live {
		s.tenant = of()
	}
	for _, c := range ctrs {
		c.tenant = of()
	}
	for _, kv := range kvs {
		kv.tenant = of()
	}
	for _, l := range lists {
		l.tenant = of()
	}
	n := r.count()
	if r.err == nil && n != len(closed) {
		panic(fmt.Sprintf("%d closed sessions listed, %d named by slots", n, len(closed)))
	}
	for range n {
		id := r.u()
		s := closed[id]
		if s == nil {
			if r.err != nil {
				return
			}
			panic(fmt.Sprintf("closed session %#x, which no slot names", id))
		}
		s.connID.Store(r.u())
		s.tenant = of()
	}
}

// subPattern is one pattern's registrations, for a snapshot.
type subPattern struct {
	pattern string
	subs    []SessionID
	queues  []subQueueRec
}

type subQueueRec struct {
	name    string
	next    uint64
	members []SessionID
}

// snapshotPatterns lists every pattern with registrations, sorted, with
// its non-grouped sessions and its queue groups in their current order.
func (l *Sublist) snapshotPatterns() []subPattern {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []subPattern
	var walk func(n *subNode)
	walk = func(n *subNode) {
		if len(n.subs) > 0 || len(n.queues) > 0 {
			p := subPattern{pattern: n.pattern}
			for _, s := range n.subs {
				p.subs = append(p.subs, s.s)
			}
			for _, q := range n.queues {
				p.queues = append(p.queues, subQueueRec{q.name, q.next.Load(), slices.Clone(q.members)})
			}
			out = append(out, p)
		}
		for _, c := range n.lit {
			walk(c)
		}
		if n.star != nil {
			walk(n.star)
		}
		if n.full != nil {
			walk(n.full)
		}
	}
	walk(&l.mu.root)
	slices.SortFunc(out, func(a, b subPattern) int { return strings.Compare(a.pattern, b.pattern) })
	return out
}

// setQueueTurn restores a queue group's round-robin position.
func (l *Sublist) setQueueTurn(pattern, name string, next uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.nodeForLocked(pattern).queue(name); q != nil {
		q.next.Store(next)
	}
}

// snapWriter encodes a snapshot and checksums it as it goes.
type snapWriter struct {
	w   *bufio.Writer
	crc uint32
	buf [binary.MaxVarintLen64]byte
	err error
}

func (w *snapWriter) raw(b []byte) {
	if w.err != nil {
		return
	}
	w.crc = crc32.Update(w.crc, crcTable, b)
	_, w.err = w.w.Write(b)
}

func (w *snapWriter) u(v uint64) { w.raw(binary.AppendUvarint(w.buf[:0], v)) }
func (w *snapWriter) i(v int64)  { w.raw(binary.AppendVarint(w.buf[:0], v)) }
func (w *snapWriter) s(v string) {
	w.u(uint64(len(v)))
	w.raw([]byte(v))
}

func (w *snapWriter) bool(v bool) {
	if v {
		w.u(1)
	} else {
		w.u(0)
	}
}

// timer writes whether a node is armed and its deadline.
func (w *snapWriter) timer(n *timerwheel.Node) {
	w.bool(n.Armed())
	w.i(int64(n.Deadline()))
}

// slot writes sl, whose lease and tag its shard knows (shard.leaseOf).
func (w *snapWriter) slot(sl *slot, lease int64, tag uint32) {
	var sid uint64
	if sl.sess != nil {
		sid = uint64(sl.sess.id)
	}
	w.u(sid)
	w.u(uint64(sl.state()))
	var flags uint64
	for i, f := range []bool{sl.twoPhase(), sl.blocked(), sl.writer(), sl.elect()} {
		if f {
			flags |= 1 << i
		}
	}
	w.u(flags)
	w.i(lease)
	w.u(sl.fence)
	w.u(uint64(tag))
	w.timer(&sl.timer)
}

func (w *snapWriter) finish() error {
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], w.crc)
	if w.err == nil {
		_, w.err = w.w.Write(tail[:])
	}
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// snapReader decodes a snapshot; the first error sticks, and reads after
// it return zero values, so Restore checks once at the end.
type snapReader struct {
	r   *bufio.Reader
	crc uint32
	err error
}

// maxSnapCount bounds a count read from a snapshot, so that damaged bytes
// cannot make Restore allocate without limit.
const maxSnapCount = 1 << 31

func (r *snapReader) raw(n int) []byte {
	if r.err != nil {
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
		return nil
	}
	r.crc = crc32.Update(r.crc, crcTable, b)
	return b
}

func (r *snapReader) u() uint64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(byteCounter{r})
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return v
}

func (r *snapReader) i() int64 {
	if r.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(byteCounter{r})
	if err != nil {
		r.err = fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return v
}

func (r *snapReader) count() int {
	n := r.u()
	if n > maxSnapCount {
		r.err = fmt.Errorf("%w: count %d", ErrBadSnapshot, n)
		return 0
	}
	return int(n)
}

func (r *snapReader) s() string { return string(r.raw(r.count())) }

func (r *snapReader) bool() bool { return r.u() != 0 }

// timer reads a node's deadline: set idle, or, if it was armed, left for
// the caller to arm (returns true).
func (r *snapReader) timer(n *timerwheel.Node) (armed bool) {
	armed = r.bool()
	d := timerwheel.Tick(r.i())
	n.SetIdleDeadline(d)
	return armed
}

// slot reads a slot's fields; armed says its timer is to be armed.
func (r *snapReader) slot(sh *shard, sl *slot, sess func(uint64) *session) (armed bool) {
	sl.sess = sess(r.u())
	st := r.u()
	if st > uint64(slotLapsed) {
		panic(fmt.Sprintf("slot state %d", st)) // two bits hold it (slot.go)
	}
	sl.setStateBits(slotState(st))
	flags := r.u()
	sl.set(flagTwoPhase, flags&1 != 0)
	sl.set(flagBlocked, flags&2 != 0)
	sl.set(flagWriter, flags&4 != 0)
	sl.set(flagElect, flags&8 != 0)
	sh.setLease(sl, r.i())
	sl.fence = r.u()
	sh.setTag(sl, uint32(r.u()))
	return r.timer(&sl.timer)
}

func (r *snapReader) finish() error {
	if r.err != nil {
		return r.err
	}
	want := r.crc
	var tail [4]byte
	if _, err := io.ReadFull(r.r, tail[:]); err != nil {
		return fmt.Errorf("%w: no checksum: %v", ErrBadSnapshot, err)
	}
	if binary.BigEndian.Uint32(tail[:]) != want {
		return fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	return nil
}

// byteCounter feeds binary.ReadUvarint one byte at a time while
// checksumming what it reads.
type byteCounter struct{ r *snapReader }

func (b byteCounter) ReadByte() (byte, error) {
	c, err := b.r.r.ReadByte()
	if err == nil {
		b.r.crc = crc32.Update(b.r.crc, crcTable, []byte{c})
	}
	return c, err
}
