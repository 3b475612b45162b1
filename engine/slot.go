package engine

import (
	"math"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// slotState is where a slot is in its life.
type slotState uint8

const (
	slotFree    slotState = iota // on the shard's free list
	slotWaiting                  // queued on a resource
	slotHolding                  // one of a resource's holders
	// slotLapsed: a two-phase grant whose lease ran out before the client's
	// w observed it, or in the rf profile a grant whose lease ran out with
	// nobody waiting behind it. It left the holder list (capacity was
	// handed on) but is kept so that w, or in rf a renew, can answer
	// error_lease_expired (spec §I.2 O1, O3).
	slotLapsed
)

// slot is one client's claim on a resource: first a waiter, then (same
// object) a holder. Keeping one object across the transition means the
// session's record of it stays valid for disconnect cleanup, whichever
// goroutine granted it.
//
// It is 80 bytes, a size class below the 96 it took before issue #37:
// its state and flags live in its timer node's owner byte, its shard in
// the session's claims, and a lease that does not fit 32 bits or a tag
// (foreign.go), both rare, in its shard's extras.
type slot struct {
	// timer is the acquire/wait timeout while waiting and the lease while
	// holding; one node suffices because the two never overlap. It is the
	// first field: a fired node is converted back to its slot (timers.go).
	// Its Flags byte holds the slot's state and flags (the flag constants).
	timer      timerwheel.Node
	res        *resource
	sess       *session
	fence      uint64 // of the grant; the token's salt is derived from it (token.go)
	prev, next *slot
	// gen changes every time the slot is freed, so a session's stale record
	// of a recycled slot is recognisable. Written under the shard lock,
	// read without it only to compact a session's records.
	gen atomic.Uint32
	// lease is the lease TTL in ms, fixed at acquire time, or leaseFar for
	// one that does not fit (negative, or 49.7 days and more): that one is
	// in the shard's extras (shard.leaseOf).
	lease uint32
}

// The bits of a slot's timer.Flags: its state in the low two, then its
// flags.
const (
	slotStateBits uint8 = 0b11
	// flagTwoPhase: created by e/se and not yet observed by w/sw.
	flagTwoPhase uint8 = 1 << (iota + 1)
	// flagBlocked: the session is parked on this slot (l, sl, w, sw) and
	// expects exactly one delivery: grant, timeout or error.
	flagBlocked
	// flagWriter: the write side of a read-write lock.
	flagWriter
	// flagElect: an elect claim; its grant makes the session the key's
	// leader (election.go).
	flagElect
	// flagUntimed: restored from a snapshot, so timer.Mark holds no start
	// time for the wait and hold histograms (latency.go).
	flagUntimed
	// flagExtra: the shard's extras hold a tag or a far lease of the slot.
	flagExtra
)

// leaseFar is slot.lease for a lease kept in the shard's extras.
const leaseFar = math.MaxUint32

func (sl *slot) state() slotState { return slotState(sl.timer.Flags & slotStateBits) }

// setStateBits sets the state alone; setState also keeps the tenant's
// counts (tenant.go).
func (sl *slot) setStateBits(st slotState) {
	sl.timer.Flags = sl.timer.Flags&^slotStateBits | uint8(st)&slotStateBits
}

func (sl *slot) has(f uint8) bool { return sl.timer.Flags&f != 0 }

func (sl *slot) twoPhase() bool { return sl.has(flagTwoPhase) }
func (sl *slot) blocked() bool  { return sl.has(flagBlocked) }
func (sl *slot) writer() bool   { return sl.has(flagWriter) }
func (sl *slot) elect() bool    { return sl.has(flagElect) }
func (sl *slot) untimed() bool  { return sl.has(flagUntimed) }

// set turns the flags f on or off.
func (sl *slot) set(f uint8, on bool) {
	if on {
		sl.timer.Flags |= f
	} else {
		sl.timer.Flags &^= f
	}
}

// slotExtra is what a slot keeps in its shard's extras: the tag of a
// tagged acquire (foreign.go) and a lease slot.lease cannot hold.
type slotExtra struct {
	lease int64 // when slot.lease is leaseFar
	tag   uint32
}

// leaseOf is sl's lease TTL in ms.
func (s *shard) leaseOf(sl *slot) int64 {
	if sl.lease != leaseFar {
		return int64(sl.lease)
	}
	return s.extras[sl].lease
}

// setLease sets sl's lease TTL in ms.
func (s *shard) setLease(sl *slot, ms int64) {
	if ms >= 0 && ms < leaseFar {
		far := sl.lease == leaseFar
		sl.lease = uint32(ms)
		if far {
			x := s.extras[sl]
			x.lease = 0
			s.putExtraLocked(sl, x)
		}
		return
	}
	sl.lease = leaseFar
	x := s.extras[sl]
	x.lease = ms
	s.putExtraLocked(sl, x)
}

// tagOf is the Result.Tag of sl's tagged acquire (foreign.go), 0 otherwise.
func (s *shard) tagOf(sl *slot) uint32 {
	if !sl.has(flagExtra) {
		return 0
	}
	return s.extras[sl].tag
}

// setTag sets the tag of sl.
func (s *shard) setTag(sl *slot, tag uint32) {
	var x slotExtra
	if sl.has(flagExtra) {
		x = s.extras[sl]
	}
	x.tag = tag
	s.putExtraLocked(sl, x)
}

// putExtraLocked stores x as sl's extra, or forgets sl's extra when it
// holds nothing.
func (s *shard) putExtraLocked(sl *slot, x slotExtra) {
	if x.tag == 0 && sl.lease != leaseFar {
		if sl.has(flagExtra) {
			delete(s.extras, sl)
			sl.set(flagExtra, false)
		}
		return
	}
	if s.extras == nil {
		s.extras = make(map[*slot]slotExtra)
	}
	s.extras[sl] = x
	sl.set(flagExtra, true)
}

// slotList is an intrusive doubly-linked FIFO of slots.
type slotList struct {
	head, tail *slot
	n          int
}

func (l *slotList) pushBack(s *slot) {
	if l == &noWaiters {
		panic("engine: append to the shared empty queue (use shard.pushWaiterLocked)")
	}
	s.prev, s.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = s
	} else {
		l.head = s
	}
	l.tail = s
	l.n++
}

func (l *slotList) remove(s *slot) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nil, nil
	l.n--
}

// pushHolder appends s to r's holders: the list of a single pointer,
// whose head's prev is its tail (resource.holders).
func (r *resource) pushHolder(s *slot) {
	if r.bits&resHolders == resHolders {
		panic("engine: holder count overflow")
	}
	r.bits++
	s.next = nil
	h := r.holders
	if h == nil {
		r.holders, s.prev = s, s
		return
	}
	s.prev = h.prev
	h.prev.next = s
	h.prev = s
}

// removeHolder takes s out of r's holders.
func (r *resource) removeHolder(s *slot) {
	r.bits--
	h := r.holders
	switch {
	case s == h:
		r.holders = s.next
		if s.next != nil {
			s.next.prev = s.prev // the tail
		}
	default:
		s.prev.next = s.next
		if s.next != nil {
			s.next.prev = s.prev
		} else {
			h.prev = s.prev // s was the tail
		}
	}
	s.prev, s.next = nil, nil
}

// slotRun is a list of a resource's slots as digests and snapshots write
// it: its length, then its slots from head through next.
type slotRun struct {
	n    int
	head *slot
}

// runs returns r's holders and then its queue.
func (s *shard) runs(r *resource) [2]slotRun {
	q := s.queueOf(r)
	return [2]slotRun{{r.nHolders(), r.holders}, {q.n, q.head}}
}

// holderByFence returns the holder of r with the grant of fence f, or nil.
func (r *resource) holderByFence(f uint64) *slot {
	for s := r.holders; s != nil; s = s.next {
		if s.fence == f {
			return s
		}
	}
	return nil
}
