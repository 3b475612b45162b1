package engine

import (
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// This file holds the lock operations of foreign protocols (godistlock,
// served by loop/godistlock.go) that dflockd's v2 commands lack. They work
// on the same lock namespace as l/r/n, so a foreign client and a dflockd
// client contend for one key in one FIFO queue, with fences from the same
// allocator; only the way a client names its claim differs:
//
//   - an acquire carries a caller-chosen tag instead of occupying the
//     session's single "parked" position, so one session may have many
//     parked acquires; the tag comes back in the delivered Result;
//   - a blocking acquire has no acquire timeout: it waits until granted,
//     the session closes, or the server drains;
//   - release and renew name the key (and for renew the fence), not the
//     token, and act only on a slot this session holds;
//   - an acquire of a lock the session already holds does not queue
//     behind itself: as godistlock's own server does, it answers at once
//     with the same grant (same fence) and restarts the lease, so a client
//     that re-sends ON to extend its lock is not stalled for a lease.

// AcquireTagged acquires the lock key for s with a lease of leaseMs
// milliseconds (0 = the default lease). If s holds it already, the same
// grant comes back at once with its lease restarted. If the lock is
// taken by another, a try
// (wait false) answers StatusTimeout at once; a wait parks the request
// with no acquire timeout and returns Blocked, and its one delivery (a
// grant, or StatusError on Drain) carries Tag == tag. tag must not be 0
// for a wait. Limits answer StatusErrorMaxLocks or StatusErrorMaxWaiters;
// a failing fence source answers StatusError.
func (e *Engine) AcquireTagged(s *Session, key []byte, leaseMs int64, wait bool, tag uint32) Result {
	if wait && tag == 0 {
		panic("engine: AcquireTagged waits with tag 0")
	}
	if leaseMs <= 0 {
		leaseMs = e.cfg.DefaultLease.Milliseconds()
	}
	sh := e.shardFor(key)
	sh.lock()
	defer sh.unlock()
	now := e.clock.Now()
	r, res := sh.admitLocked(nsLock, key, mode{limit: 1}, now)
	if r == nil {
		return res
	}
	if sl := sh.ownHolderLocked(r, s, now); sl != nil {
		sl.lease = leaseMs
		sh.armLocked(&sl.timer, now.After(leaseMs))
		sh.touchLocked(r, now)
		return Result{Status: parse.StatusOK, Kind: KindGrant, Token: sl.token, Lease: leaseMs / 1000, Tag: tag}
	}
	if _, res, ok := sh.grantNowLocked(r, s, mode{limit: 1}, leaseMs, now); ok {
		res.Tag = tag
		return res
	}
	if !wait {
		return status(parse.StatusTimeout)
	}
	if e.draining.Load() {
		return status(parse.StatusError) // a drain ends every wait (spec §D.5)
	}
	if r.queue.n >= e.cfg.MaxWaiters {
		return status(parse.StatusErrorMaxWaiters)
	}
	sl := sh.queueLocked(r, s, mode{limit: 1}, leaseMs, now)
	sl.blocked = true
	sl.tag = tag // no timer: the wait ends only by a grant, Close or Drain
	return Result{Blocked: true}
}

// ownHolderLocked returns the live slot s holds on the lock r, evicting an
// expired lease first (then it reports nil, as holderLocked does).
func (sh *shard) ownHolderLocked(r *resource, s *Session, now timerwheel.Instant) *slot {
	for sl := r.holders.head; sl != nil; sl = sl.next {
		if sl.sess != s {
			continue
		}
		if now.Passed(sl.timer.Deadline()) {
			sh.expireHolderLocked(sl, now)
			return nil
		}
		return sl
	}
	return nil
}

// ReleaseOwn releases the lock key if s holds it (released true). If s does
// not hold it but has parked tagged acquires on it, the oldest one is
// withdrawn instead: no delivery will come for it. tag is the tag of the
// acquire that the released hold or the withdrawn wait came from (0 for an
// untagged or try acquire), so the caller can settle a grant whose
// delivery is still in flight. Both zero: s had no claim on key.
func (e *Engine) ReleaseOwn(s *Session, key []byte) (released bool, tag uint32) {
	sh := e.shardFor(key)
	sh.lock()
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return false, 0
	}
	now := e.clock.Now()
	if sl := sh.ownHolderLocked(r, s, now); sl != nil {
		tag := sl.tag
		sh.releaseHolderLocked(sl, now)
		return true, tag
	}
	for sl := r.queue.head; sl != nil; sl = sl.next {
		if sl.sess == s && sl.blocked && sl.tag != 0 {
			tag := sl.tag
			r.queue.remove(sl)
			sh.freeSlotLocked(sl)
			sh.touchLocked(r, now)
			return false, tag
		}
	}
	return false, 0
}

// RenewFence restarts, at now+leaseMs (0 = the default lease), the lease of
// the lock key that s holds under fence. It reports false when s does not
// hold key with that fence (released, expired, or another fence).
func (e *Engine) RenewFence(s *Session, key []byte, fence uint64, leaseMs int64) bool {
	if leaseMs <= 0 {
		leaseMs = e.cfg.DefaultLease.Milliseconds()
	}
	sh := e.shardFor(key)
	sh.lock()
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return false
	}
	now := e.clock.Now()
	sl := sh.ownHolderLocked(r, s, now)
	if sl == nil || sl.token.Fence != fence {
		return false
	}
	sl.lease = leaseMs
	sh.armLocked(&sl.timer, now.After(leaseMs))
	sh.touchLocked(r, now)
	return true
}

// HolderFence reports the fence of the live holder of the lock key, whoever
// holds it (a dflockd or a foreign client). An expired lease is evicted
// first, so the answer does not depend on timer latency.
func (e *Engine) HolderFence(key []byte) (fence uint64, held bool) {
	sh := e.shardFor(key)
	sh.lock()
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return 0, false
	}
	sh.evictExpiredLocked(r, e.clock.Now())
	if h := r.holders.head; h != nil {
		return h.token.Fence, true
	}
	return 0, false
}

// LockCounts reports how many lock keys are held and how many acquires wait
// on lock keys (semaphores are not counted), visiting shards one by one.
func (e *Engine) LockCounts() (held, waiting int) {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		for _, r := range sh.res[nsLock] {
			if r.holders.n > 0 {
				held++
			}
			waiting += r.queue.n
		}
		sh.unlock()
	}
	return held, waiting
}
