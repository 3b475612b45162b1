package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// This file holds the lock operations of foreign protocols (godistlock,
// served by the session package's godistlock codec) that dflockd's v2
// commands lack. They work on the same lock namespace as l/r/n, so a
// foreign client and a dflockd client contend for one key in one FIFO
// queue, with fences from the same counter; only the way a client names
// its claim differs:
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

// foreignLeaseMs is a foreign command's lease: LeaseMs, or the default.
func (e *Engine) foreignLeaseMs(c *Command) int64 {
	if c.LeaseMs <= 0 {
		return e.cfg.DefaultLease.Milliseconds()
	}
	return c.LeaseMs
}

// acquireTagged (KindTaggedAcquire) acquires the lock Req.Key for s. If s
// holds it already, the same grant comes back at once with its lease
// restarted. If another holds it, a try (Wait false) answers
// StatusTimeout at once; a wait parks the request with no acquire timeout
// and returns Blocked, and its one delivery (a grant, or StatusError on a
// drain) carries Tag, which must not be 0 for a wait. Limits, and the
// session's tenant's quotas, answer StatusErrorMaxLocks or
// StatusErrorMaxWaiters; a failing fence source answers StatusError.
func (e *Engine) acquireTagged(s *session, c *Command, fx *Effects) Result {
	if c.Wait && c.Tag == 0 {
		panic("engine: a tagged acquire waits with tag 0")
	}
	leaseMs, now, key := e.foreignLeaseMs(c), c.At, c.Req.Key
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	r, st := sh.admitLocked(nsLock, key, mode{limit: 1}, now)
	if r == nil {
		return status(st)
	}
	if sl := sh.ownHolderLocked(r, s, now); sl != nil {
		sh.setLease(sl, leaseMs)
		sh.armLocked(&sl.timer, now.After(leaseMs))
		sh.noteLocked(EventRenew, sl, now)
		sh.touchLocked(r, now)
		res := sh.grantResult(sl)
		res.Tag = c.Tag
		return res
	}
	// A new claim: within the identity's quotas, as every acquire's
	// (tenant.go); its own hold's renewal above is not one.
	if st := s.admitClaim(c.Wait && (r.waiting() || !r.fits(false))); st != vocab.StatusOK {
		return status(st)
	}
	if sl, ok := sh.grantNowLocked(r, s, mode{limit: 1}, leaseMs, now); ok {
		var res Result
		sh.grantAnswer(sl, &res)
		res.Tag = c.Tag
		return res
	}
	if !c.Wait {
		return status(vocab.StatusTimeout)
	}
	if e.draining.Load() {
		return status(vocab.StatusError) // a drain ends every wait (spec §D.5)
	}
	if sh.queueOf(r).n >= e.cfg.MaxWaiters {
		return status(vocab.StatusErrorMaxWaiters)
	}
	sl := sh.queueLocked(r, s, mode{limit: 1}, leaseMs, now)
	sl.set(flagBlocked, true)
	sh.setTag(sl, c.Tag) // no timer: the wait ends only by a grant, a close or a drain
	return Result{Blocked: true}
}

// ownHolderLocked returns the live slot s holds on the lock r, evicting an
// expired lease first (then it reports nil, as holderLocked does).
func (sh *shard) ownHolderLocked(r *resource, s *session, now timerwheel.Instant) *slot {
	for sl := r.holders; sl != nil; sl = sl.next {
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

// releaseOwn (KindOwnRelease) releases the lock Req.Key if s holds it
// (StatusOK). If s does not hold it but has parked tagged acquires on it,
// the oldest one is withdrawn instead (StatusNil): no delivery will come
// for it. Tag is the tag of the acquire that the released hold or the
// withdrawn wait came from (0 for an untagged or try acquire), so the
// caller can settle a grant whose delivery is still in flight. StatusError:
// s had no claim on the key.
func (e *Engine) releaseOwn(s *session, c *Command, fx *Effects) Result {
	key, now := c.Req.Key, c.At
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return status(vocab.StatusError)
	}
	if sl := sh.ownHolderLocked(r, s, now); sl != nil {
		tag := sh.tagOf(sl)
		sh.noteLocked(EventRelease, sl, now)
		sh.releaseHolderLocked(sl, now)
		return Result{Status: vocab.StatusOK, Tag: tag}
	}
	for sl := sh.queueOf(r).head; sl != nil; sl = sl.next {
		if sl.sess == s && sl.blocked() && sh.tagOf(sl) != 0 {
			tag := sh.tagOf(sl)
			sh.noteLocked(EventCancel, sl, now)
			sh.removeWaiterLocked(r, sl)
			sh.freeSlotLocked(sl)
			sh.touchLocked(r, now)
			return Result{Status: vocab.StatusNil, Tag: tag}
		}
	}
	return status(vocab.StatusError)
}

// renewFence (KindFenceRenew) restarts, at At+LeaseMs (0 = the default
// lease), the lease of the lock Req.Key that s holds under Fence:
// StatusOK, or StatusError when s does not hold the key with that fence
// (released, expired, or another fence).
func (e *Engine) renewFence(s *session, c *Command, fx *Effects) Result {
	leaseMs, now, key := e.foreignLeaseMs(c), c.At, c.Req.Key
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return status(vocab.StatusError)
	}
	sl := sh.ownHolderLocked(r, s, now)
	if sl == nil || sl.fence != c.Fence {
		return status(vocab.StatusError)
	}
	sh.setLease(sl, leaseMs)
	sh.armLocked(&sl.timer, now.After(leaseMs))
	sh.noteLocked(EventRenew, sl, now)
	sh.touchLocked(r, now)
	return status(vocab.StatusOK)
}

// holderFence (KindHolder) reports the fence of the live holder of the lock
// Req.Key, whoever holds it (a dflockd or a foreign client), as the Token
// of a StatusOK Result, or StatusNil when nobody does. An expired lease is
// evicted first, so the answer does not depend on timer latency.
func (e *Engine) holderFence(c *Command, fx *Effects) Result {
	sh := e.shardFor(c.Req.Key)
	sh.lock(fx)
	defer sh.unlock()
	r := sh.lookupLocked(nsLock, c.Req.Key)
	if r == nil {
		return status(vocab.StatusNil)
	}
	sh.evictExpiredLocked(r, c.At)
	if h := r.holders; h != nil {
		return Result{Status: vocab.StatusOK, Token: e.token(h.fence)}
	}
	return status(vocab.StatusNil)
}

// LockCounts reports how many lock keys are held and how many acquires wait
// on lock keys (semaphores are not counted), visiting shards one by one.
func (e *Engine) LockCounts() (held, waiting int) {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for r := range sh.res[nsLock].all {
			if r.nHolders() > 0 {
				held++
			}
			waiting += sh.queueOf(r).n
		}
		sh.mu.Unlock()
	}
	return held, waiting
}
