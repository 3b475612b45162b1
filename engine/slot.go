package engine

import (
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
type slot struct {
	// timer is the acquire/wait timeout while waiting and the lease while
	// holding; one node suffices because the two never overlap. It is the
	// first field: a fired node is converted back to its slot (timers.go).
	timer timerwheel.Node
	res   *resource
	sess  *session
	state slotState
	// twoPhase: created by e/se and not yet observed by w/sw.
	twoPhase bool
	// blocked: the session is parked on this slot (l, sl, w, sw) and
	// expects exactly one delivery: grant, timeout or error.
	blocked bool
	// writer: the write side of a read-write lock.
	writer bool
	// elect: an elect claim; its grant makes the session the key's leader
	// (election.go).
	elect bool
	// untimed: restored from a snapshot, so timer.Mark holds no start
	// time for the wait and hold histograms (latency.go).
	untimed bool
	// shard is the index of the shard the slot belongs to, for ever (free
	// slots stay on their shard's list), so it may be read without a lock.
	shard      uint16
	lease      int64  // lease TTL in ms, fixed at acquire time
	fence      uint64 // of the grant; the token's salt is derived from it (token.go)
	prev, next *slot
	// gen changes every time the slot is freed, so a session's stale record
	// of a recycled slot is recognisable. Written under the shard lock,
	// read without it only to compact a session's records.
	gen atomic.Uint32
	// tag is the Result.Tag of a tagged acquire (foreign.go), 0 otherwise.
	// It sits in gen's padding, so the slot stays in its size class.
	tag uint32
}

// slotList is an intrusive doubly-linked FIFO of slots.
type slotList struct {
	head, tail *slot
	n          int
}

func (l *slotList) pushBack(s *slot) {
	if l == &noWaiters {
		panic("engine: append to the shared empty queue (use resource.ownQueue)")
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
func (r *resource) runs() [2]slotRun {
	return [2]slotRun{{r.nHolders(), r.holders}, {r.queue.n, r.queue.head}}
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
