package engine

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"
)

// Digest returns a hash of the engine's state as the commands left it:
// every resource with its holders and queue (sessions, fences, deadlines,
// leases, flags), counters, KV entries with their TTLs, lists with their
// items and poppers, barriers, leader watchers, subscriptions and watches,
// two-phase states, the requests queued behind waits, the tenants (their
// bounds and counts, whose each session and key is), the fence counter
// and the drain flag. It leaves out
// what only reflects the engine's layout (the shard count, free lists,
// generation stamps), so engines that applied the same commands digest the
// same, whatever their shard counts: the check a test (or a cluster's
// replicas) makes that two engines agree.
//
// Digest visits shards one by one; concurrent commands make its result
// meaningless, so call it when the engine is quiet.
func (e *Engine) Digest() [sha256.Size]byte {
	var d digester
	d.u64(e.fence.Load())
	d.bool(e.draining.Load())
	var recs []digestRec
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		recs = sh.digestRecsLocked(recs)
		sh.mu.Unlock()
	}
	slices.SortFunc(recs, func(a, b digestRec) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), strings.Compare(a.key, b.key))
	})
	for _, r := range recs {
		d.u64(uint64(r.kind))
		d.str(r.key)
		d.bytes(r.data)
	}
	for _, l := range []*Sublist{e.subs, e.watches} {
		for _, p := range l.Patterns() {
			d.str(p.Pattern)
			d.str(p.Group)
			d.u64(uint64(p.Subscribers))
		}
	}
	// The requests queued behind waits (queue.go), by session.
	t := &e.sessions
	t.mu.Lock()
	n := len(t.mu.gens)
	t.mu.Unlock()
	for idx := range n {
		if s := t.chunk(uint32(idx))[idx%chunkSize].Load(); s != nil && len(s.queue) > 0 {
			d.u64(uint64(s.id))
			d.bytes(s.queue)
		}
	}
	// Tenants (tenant.go), only where there are any, so that an engine
	// without them digests as it did before they existed: their bounds
	// and counts, then whose each session is.
	if tenants := e.sortedTenants(); len(tenants) > 0 {
		for _, tn := range tenants {
			d.str(tn.name)
			mc, mw, mk := tn.Limits()
			c, w, k := tn.Usage()
			for _, v := range []int64{mc, mw, mk, c, w, k} {
				d.u64(uint64(v))
			}
		}
		for idx := range n {
			if s := t.chunk(uint32(idx))[idx%chunkSize].Load(); s != nil && s.tenant != nil {
				d.u64(uint64(s.id))
				d.str(s.tenant.name)
			}
		}
	}
	return sha256.Sum256(d.b)
}

// digestRec is one keyed record of a shard's state, encoded.
type digestRec struct {
	kind uint8
	key  string
	data []byte
}

func (s *shard) digestRecsLocked(recs []digestRec) []digestRec {
	for ns := range s.res {
		for r := range s.res[ns].all {
			var d digester
			d.u64(uint64(r.limit))
			d.bool(r.isRW())
			d.u64(uint64(r.lastActive))
			for _, l := range s.runs(r) {
				d.u64(uint64(l.n))
				for sl := l.head; sl != nil; sl = sl.next {
					d.slot(sl, s.leaseOf(sl), s.tagOf(sl))
				}
			}
			recs = append(recs, digestRec{uint8(ns), r.key(), d.b})
		}
	}
	for k, c := range s.counters {
		var d digester
		d.u64(uint64(c.value))
		d.u64(uint64(c.lastActive))
		d.tenant(c.tenant)
		recs = append(recs, digestRec{10, k, d.b})
	}
	for k, kv := range s.kv {
		var d digester
		d.str(kv.value)
		d.bool(kv.hasTTL)
		if kv.hasTTL {
			d.u64(uint64(kv.timer.Deadline()))
		}
		d.u64(uint64(kv.lastActive))
		d.tenant(kv.tenant)
		recs = append(recs, digestRec{11, k, d.b})
	}
	for k, l := range s.lists {
		var d digester
		d.u64(uint64(l.len()))
		for _, v := range l.items[l.head:] {
			d.str(v)
		}
		for w := l.waiters.head; w != nil; w = w.ln.next {
			d.u64(uint64(w.sess.id))
			d.str(w.op)
			d.u64(uint64(w.timer.Deadline()))
		}
		d.u64(uint64(l.lastActive))
		d.tenant(l.tenant)
		recs = append(recs, digestRec{12, k, d.b})
	}
	for k, b := range s.barriers {
		var d digester
		d.u64(uint64(b.count))
		for w := b.parts.head; w != nil; w = w.ln.next {
			d.u64(uint64(w.sess.id))
			d.u64(uint64(w.timer.Deadline()))
		}
		d.u64(uint64(b.lastActive))
		recs = append(recs, digestRec{13, k, d.b})
	}
	for k, el := range s.elections {
		var d digester
		for _, w := range el.watchers {
			d.u64(uint64(w.sess.id))
			d.bool(w.observer)
			d.bool(w.holder)
		}
		recs = append(recs, digestRec{14, k, d.b})
	}
	return recs
}

// digester accumulates a canonical encoding.
type digester struct{ b []byte }

func (d *digester) u64(v uint64) { d.b = binary.BigEndian.AppendUint64(d.b, v) }
func (d *digester) str(s string) { d.u64(uint64(len(s))); d.b = append(d.b, s...) }
func (d *digester) bytes(b []byte) {
	d.u64(uint64(len(b)))
	d.b = append(d.b, b...)
}

func (d *digester) bool(v bool) {
	if v {
		d.b = append(d.b, 1)
	} else {
		d.b = append(d.b, 0)
	}
}

// tenant encodes whose a key is, only when it is somebody's (a digest
// without tenants stays what it was before they existed).
func (d *digester) tenant(t *Tenant) {
	if t != nil {
		d.str(t.name)
	}
}

// slot encodes a holder or waiter: its session, fence, lease, deadline
// (a holder's, kept past its firing; a waiter's while armed) and flags.
func (d *digester) slot(sl *slot, lease int64, tag uint32) {
	d.u64(uint64(sl.sess.id))
	d.u64(uint64(sl.state()))
	d.u64(sl.fence)
	d.u64(uint64(lease))
	if sl.state() == slotHolding || sl.timer.Armed() {
		d.u64(uint64(sl.timer.Deadline()))
	}
	d.bool(sl.timer.Armed())
	d.bool(sl.twoPhase())
	d.bool(sl.blocked())
	d.bool(sl.writer())
	d.bool(sl.elect())
	d.u64(uint64(tag))
}
