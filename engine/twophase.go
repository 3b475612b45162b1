package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// enqueue serves e and se (two-phase acquire, phase 1). The enqueue state
// belongs to the (session, key) pair: only this session's w can finish it.
func (e *Engine) enqueue(sess *session, ns namespace, key []byte, m mode, leaseMs int64, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	if sl := sess.enqueued(ns, key); sl != nil {
		if sl.state() == slotHolding && now.Passed(sl.timer.Deadline()) {
			sh.expireHolderLocked(sl, now)
		}
		if sl.state() != slotLapsed {
			return status(vocab.StatusErrorAlreadyEnqueued)
		}
		// The fast-path grant lapsed unobserved: like dflockd after its
		// sweep, a new e starts afresh (spec §I.2 O2).
		sess.forgetEnqueued(ns, key)
		sh.freeSlotLocked(sl)
	}
	r, st := sh.admitLocked(ns, key, m, now)
	if r == nil {
		return status(st)
	}
	if st := sess.admitClaim(r.waiting() || !r.fits(m.writer)); st != vocab.StatusOK {
		return status(st) // the identity's quota (tenant.go)
	}
	if sl, ok := sh.grantNowLocked(r, sess, m, leaseMs, now); ok {
		var res Result
		sh.grantAnswer(sl, &res)
		if sl == nil {
			return res
		}
		sl.set(flagTwoPhase, true)
		sess.rememberEnqueued(ns, r.key(), sl, sh.index)
		res.Status = vocab.StatusAcquired
		return res
	}
	if sh.queueOf(r).n >= e.cfg.MaxWaiters {
		return status(vocab.StatusErrorMaxWaiters)
	}
	sl := sh.queueLocked(r, sess, m, leaseMs, now)
	sl.set(flagTwoPhase, true) // no timer until w
	sess.rememberEnqueued(ns, r.key(), sl, sh.index)
	return status(vocab.StatusQueued)
}

// wait serves w and sw (phase 2). It consumes the enqueue state whatever
// the outcome: after a timeout the client must e again (spec §B.1.5).
func (e *Engine) wait(sess *session, ns namespace, key []byte, timeoutMs int64, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	sl := sess.enqueued(ns, key)
	if sl == nil {
		return status(vocab.StatusErrorNotEnqueued)
	}
	sess.forgetEnqueued(ns, key)
	switch sl.state() {
	case slotLapsed:
		sh.freeSlotLocked(sl)
		return status(vocab.StatusErrorLeaseExpired)
	case slotHolding:
		if now.Passed(sl.timer.Deadline()) {
			// Lease ran out before the driver fired: same answer as lapsed.
			sh.expireHolderLocked(sl, now)
			sh.freeSlotLocked(sl)
			return status(vocab.StatusErrorLeaseExpired)
		}
		// Observing the grant restarts its lease (every dflockd version).
		sl.set(flagTwoPhase, false)
		sh.watchEventLocked(evAcquire, sl.res.key()) // w succeeded (§B.10: e+w fast path emits twice)
		sh.armLocked(&sl.timer, now.After(sh.leaseOf(sl)))
		sh.touchLocked(sl.res, now)
		return sh.grantResult(sl)
	}
	// Still queued.
	sl.set(flagTwoPhase, false)
	if timeoutMs == 0 {
		sh.timeoutWaiterLocked(sl, now)
		return status(vocab.StatusTimeout)
	}
	if e.draining.Load() {
		sh.dropWaiterLocked(sl, now) // a drain ends every wait (spec §D.5)
		return status(vocab.StatusError)
	}
	sl.set(flagBlocked, true)
	sh.armLocked(&sl.timer, now.After(timeoutMs))
	sh.touchLocked(sl.res, now)
	return Result{Blocked: true}
}
