package engine

import (
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// acquire serves l and sl (and rl, wl, elect) into *out: a grant on the
// fast path, an immediate timeout for a try-lock (timeout 0), or a parked
// waiter. The hot path writes its answer in place, as release does: a
// Result returned by value is copied at every call it passes (issue #21).
func (e *Engine) acquire(sess *session, ns namespace, key []byte, m mode, timeoutMs, leaseMs int64, now timerwheel.Instant, fx *Effects, out *Result) {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	r, st := sh.admitLocked(ns, key, m, now)
	if r == nil {
		*out = Result{Status: st}
		return
	}
	queue := r.waiting() || !r.fits(m.writer)
	if st := sess.admitClaim(queue && timeoutMs > 0); st != vocab.StatusOK {
		*out = Result{Status: st} // the identity's quota (tenant.go)
		return
	}
	if sl, ok := sh.grantNowLocked(r, sess, m, leaseMs, now); ok {
		sh.grantAnswer(sl, out)
		return
	}
	// A try-lock still counts against --max-waiters, as in dflockd (§B.1.3).
	if sh.queueOf(r).n >= e.cfg.MaxWaiters {
		*out = Result{Status: vocab.StatusErrorMaxWaiters}
		return
	}
	if timeoutMs == 0 {
		*out = Result{Status: vocab.StatusTimeout}
		return
	}
	if e.draining.Load() {
		*out = Result{Status: vocab.StatusError} // a drain ends every wait (spec §D.5)
		return
	}
	sl := sh.queueLocked(r, sess, m, leaseMs, now)
	sl.set(flagBlocked, true)
	sh.armLocked(&sl.timer, now.After(timeoutMs))
	*out = Result{Blocked: true}
}

// grantNowLocked is the fast path of every acquire: with capacity free and
// nobody queued (strict FIFO: no barging past waiters) it grants r to sess
// and records the claim. ok is false when the caller must queue instead;
// a grant that failed (fence error) comes back with ok true and sl nil.
func (sh *shard) grantNowLocked(r *resource, sess *session, m mode, leaseMs int64, now timerwheel.Instant) (sl *slot, ok bool) {
	if r.waiting() || !r.fits(m.writer) {
		return nil, false
	}
	sl = sh.newSlotLocked(r, sess)
	sh.setLease(sl, leaseMs)
	sl.set(flagWriter, m.writer)
	sl.set(flagElect, m.elect)
	granted := sh.grantLocked(sl, now)
	sh.touchLocked(r, now)
	if !granted {
		return nil, true // grantLocked freed the slot
	}
	sess.record(sl, sh.index)
	return sl, true
}

// grantAnswer writes the answer of grantNowLocked's ok into *out: sl's
// grant, or the plain error of a grant that failed (sl nil).
func (sh *shard) grantAnswer(sl *slot, out *Result) {
	if sl == nil {
		*out = Result{Status: vocab.StatusError}
		return
	}
	*out = Result{Status: vocab.StatusOK, Kind: KindGrant, Token: sh.eng.token(sl.fence), Lease: sh.leaseOf(sl) / 1000}
}

// queueLocked appends a waiting slot for sess to r's FIFO and records the
// claim. Callers check --max-waiters first; they set the slot's timer and
// flags.
func (sh *shard) queueLocked(r *resource, sess *session, m mode, leaseMs int64, now timerwheel.Instant) *slot {
	sl := sh.newSlotLocked(r, sess)
	sh.setLease(sl, leaseMs)
	sl.set(flagWriter, m.writer)
	sl.set(flagElect, m.elect)
	sl.setState(slotWaiting)
	stamp(sl, now)
	sh.pushWaiterLocked(r, sl)
	sh.noteLocked(EventQueue, sl, now)
	sess.record(sl, sh.index)
	sh.touchLocked(r, now)
	return sl
}

// admitLocked finds or creates the resource for an acquire or enqueue and
// checks its limit. It evicts holders whose lease has run out even if the
// timer has not fired yet, so the answer never depends on timer latency.
// A nil resource comes with the error status to answer.
func (sh *shard) admitLocked(ns namespace, key []byte, m mode, now timerwheel.Instant) (*resource, vocab.Status) {
	r := sh.lookupLocked(ns, key)
	if r == nil {
		if r = sh.createLocked(ns, key, m, now); r == nil {
			return nil, vocab.StatusErrorMaxLocks
		}
		return r, vocab.StatusOK
	}
	if r.isRW() != m.rw {
		return nil, vocab.StatusErrorTypeMismatch // spec §B.4
	}
	if !m.rw && int(r.limit) != m.limit {
		return nil, vocab.StatusErrorLimitMismatch
	}
	if !r.fits(m.writer) {
		sh.evictExpiredLocked(r, now)
	}
	return r, vocab.StatusOK
}

// evictExpiredLocked removes holders whose lease deadline has passed.
func (sh *shard) evictExpiredLocked(r *resource, now timerwheel.Instant) {
	for sl := r.holders; sl != nil; {
		next := sl.next
		if now.Passed(sl.timer.Deadline()) {
			sh.expireHolderLocked(sl, now)
		}
		sl = next
	}
}

// grantLocked makes sl a holder: fence, lease timer. On a fence failure
// (persistence broken, spec §C.3) the slot is freed and it reports false:
// the answer is a plain error.
func (sh *shard) grantLocked(sl *slot, now timerwheel.Instant) bool {
	f, ok := sh.eng.nextFence()
	if !ok {
		sh.freeSlotLocked(sl)
		return false
	}
	sl.fence = f
	sh.waitEndedLocked(sl, now, true)
	stamp(sl, now)
	sl.setState(slotHolding)
	sl.res.pushHolder(sl)
	sh.noteLocked(EventGrant, sl, now)
	sh.counts.grants++
	sh.armLocked(&sl.timer, now.After(sh.leaseOf(sl)))
	switch {
	case sl.elect():
		sh.electedLocked(sl)
	case !sl.twoPhase():
		// A queued two-phase grant is announced when its w observes it.
		sh.watchEventLocked(evAcquire, sl.res.key())
	}
	return true
}

// grantResult is the grant reply of a holding slot.
func (sh *shard) grantResult(sl *slot) (r Result) {
	sh.grantAnswer(sl, &r)
	return r
}

// handOffLocked grants freed capacity to the queue head(s) in FIFO order:
// as many waiters as fit, so consecutive readers of a read-write lock are
// granted as a batch and a writer at the head stops everything behind it.
// A parked session gets its grant delivered; a two-phase waiter that has
// not called w yet simply becomes a holder, and w will find it so.
func (sh *shard) handOffLocked(r *resource, now timerwheel.Instant) {
	for r.waiting() {
		sl := sh.queueOf(r).head
		if !r.fits(sl.writer()) {
			break
		}
		sh.removeWaiterLocked(r, sl)
		sess, blocked, tag := sl.sess, sl.blocked(), sh.tagOf(sl)
		sl.set(flagBlocked, false)
		if len(sh.elections) != 0 {
			sh.failoverLocked(r) // before the new holder's "elected"
		}
		granted := sh.grantLocked(sl, now)
		if blocked {
			res := status(vocab.StatusError)
			if granted {
				res = sh.grantResult(sl)
			}
			res.Tag = tag // tagged acquires (foreign.go); 0 otherwise
			sh.deliverLocked(sess, res)
		}
	}
	sh.touchLocked(r, now)
}

// releaseHolderLocked drops a holder and hands its capacity on.
func (sh *shard) releaseHolderLocked(sl *slot, now timerwheel.Instant) {
	r := sh.dropHolderLocked(sl, evRelease, now) // explicit or implicit (expiry, disconnect)
	sh.handOffLocked(r, now)
}

// dropHolderLocked frees a holder's slot and announces event to watchers;
// the caller hands the capacity on.
func (sh *shard) dropHolderLocked(sl *slot, event string, now timerwheel.Instant) *resource {
	r := sl.res
	sh.counts.releases++
	sh.holdEndedLocked(sl, now)
	r.removeHolder(sl)
	sh.freeSlotLocked(sl)
	sh.watchEventLocked(event, r.key())
	return r
}

// leaseEndedLocked runs when a holder's lease timer fires: the lease ends
// then, in every profile. (The rf profile once kept an expired holder
// nobody waited behind until the GC pass, as dflockd's sweeper does, so
// that its renew could answer error_lease_expired; watchers then heard of
// the release seconds late. A lapsed record answers that renew now.)
func (sh *shard) leaseEndedLocked(sl *slot, now timerwheel.Instant) {
	sh.expireHolderLocked(sl, now)
}

// expireHolderLocked ends a lease: the release is announced and the
// capacity handed on at once. A grant whose loss must stay reportable
// lapses instead of being freed: a two-phase grant nobody has observed
// yet, so that its w answers error_lease_expired, and in the rf profile
// a grant nobody waits behind, so that its renew does (spec §B.0, §I.2
// O3), as dflockd's redis-feats line keeps such a holder until its sweep.
// (A grant with a waiter behind it is handed on and forgotten there too.)
func (sh *shard) expireHolderLocked(sl *slot, now timerwheel.Instant) {
	sh.noteLocked(EventExpire, sl, now) // names the holder that lost the key
	sh.counts.expiries++
	if !sl.twoPhase() && !(sh.eng.rf() && !sl.res.waiting()) {
		sh.releaseHolderLocked(sl, now)
		return
	}
	r := sl.res
	r.removeHolder(sl)
	sh.counts.releases++
	sh.holdEndedLocked(sl, now)
	sh.cancelLocked(&sl.timer) // keeps the deadline: when the lease ended
	if !sl.twoPhase() {
		// No w will look for it: it answers renew by token, from any
		// session, and outlives its own (closeSession skips it). Its
		// session's tenant no longer counts it.
		sl.leaveTenant()
		sl.sess = nil
	}
	sh.lapseLocked(sl)
	sh.watchEventLocked(evRelease, r.key())
	sh.handOffLocked(r, now)
}

// timeoutWaiterLocked ends a wait whose timeout fired.
func (sh *shard) timeoutWaiterLocked(sl *slot, now timerwheel.Instant) {
	sh.noteLocked(EventTimeout, sl, now)
	sh.counts.timeouts++
	sh.waitEndedLocked(sl, now, false)
	sess, blocked := sl.sess, sl.blocked()
	sh.dropWaiterLocked(sl, now)
	if blocked {
		sh.deliverLocked(sess, status(vocab.StatusTimeout))
	}
}

// dropWaiterLocked removes a waiter from its queue. Readers queued behind
// a departing writer may fit now (spec §B.4), so the queue is
// re-evaluated; for locks and semaphores that finds nothing to grant.
func (sh *shard) dropWaiterLocked(sl *slot, now timerwheel.Instant) {
	r := sl.res
	sh.removeWaiterLocked(r, sl)
	sh.freeSlotLocked(sl)
	sh.handOffLocked(r, now)
}

// holderLocked finds the live holder of token text tok on key. A holder
// whose lease has run out is evicted and reported as expired instead: an
// expired lease is never renewed or released (spec §B.1). So is, in the
// rf profile, the lapsed record of one that expired earlier; the request
// consumes it, as it would have evicted the expired holder in dflockd's
// redis-feats line: the next one with that token is a plain error.
func (sh *shard) holderLocked(ns namespace, key, tok []byte, now timerwheel.Instant) (sl *slot, expired bool) {
	t, ok := fence.ParseToken(tok)
	if !ok || !sh.eng.validToken(t) {
		return nil, false
	}
	r := sh.lookupLocked(ns, key)
	if r == nil {
		return nil, false
	}
	if sl = r.holderByFence(t.Fence); sl == nil {
		// The token is genuine: its fence names one grant only.
		if l := sh.lapsedFences[t.Fence]; l != nil && l.res == r {
			sh.freeSlotLocked(l)
			return nil, true
		}
		return nil, false
	}
	if now.Passed(sl.timer.Deadline()) {
		sh.expireHolderLocked(sl, now)
		if sh.lapsedFences[t.Fence] == sl {
			sh.freeSlotLocked(sl) // lapsed just now: this request consumes it
		}
		return nil, true
	}
	return sl, false
}

// release serves r and sr into *out.
func (e *Engine) release(ns namespace, key, tok []byte, now timerwheel.Instant, fx *Effects, out *Result) {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	sl, _ := sh.holderLocked(ns, key, tok, now)
	if sl == nil {
		sh.wrongTokenLocked(ns, key, now)
		*out = Result{Status: vocab.StatusError}
		return
	}
	sh.noteLocked(EventRelease, sl, now)
	sh.releaseHolderLocked(sl, now)
	*out = Result{Status: vocab.StatusOK}
}

// wrongTokenLocked: in dflockd before v1.16.1 a release or renew with a
// wrong token still counted as activity on the key and postponed its GC
// (spec §D.6); the v1 profile keeps that.
func (sh *shard) wrongTokenLocked(ns namespace, key []byte, now timerwheel.Instant) {
	if sh.eng.cfg.Profile != vocab.ProfileV1 {
		return
	}
	if r := sh.lookupLocked(ns, key); r != nil {
		sh.touchLocked(r, now)
	}
}

// renew serves n and sn: the lease restarts at now+ttl and the reply echoes
// the ttl (spec §B.0).
func (e *Engine) renew(ns namespace, key, tok []byte, leaseMs int64, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	sl, expired := sh.holderLocked(ns, key, tok, now)
	if sl == nil {
		sh.wrongTokenLocked(ns, key, now)
		if expired && e.rf() {
			return status(vocab.StatusErrorLeaseExpired) // spec §B.0, §I.4
		}
		return status(vocab.StatusError)
	}
	sh.setLease(sl, leaseMs)
	sh.armLocked(&sl.timer, now.After(leaseMs))
	sh.noteLocked(EventRenew, sl, now)
	return Result{Status: vocab.StatusOK, Kind: KindRenew, Token: e.token(sl.fence), Lease: leaseMs / 1000}
}
