package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// readopt serves an acquire of a session that took over an orphaned one
// (Command.Readopt): its own claim on the key, if it has one, answers
// instead of a new one. A held slot answers with its grant (same token;
// the lease runs on, unless the grant came to a two-phase enqueue nobody
// had observed: then, as for w, it restarts). A waiting slot keeps its
// place in the FIFO and the request parks on it with its own timeout,
// as a w would; that includes the slot of the request the orphaned
// connection was waiting in when it went. ok is false when the session has no claim there (or one
// of another mode): an ordinary acquire follows.
func (e *Engine) readopt(sess *session, ns namespace, key []byte, m mode, timeoutMs int64, now timerwheel.Instant, fx *Effects) (Result, bool) {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	r := sh.lookupLocked(ns, key)
	if r == nil || r.isRW() != m.rw || (!m.rw && int(r.limit) != m.limit) {
		return Result{}, false
	}
	sh.evictExpiredLocked(r, now)
	for sl := r.holders; sl != nil; sl = sl.next {
		if sl.sess != sess || sl.writer() != m.writer || sl.elect() {
			continue
		}
		if sl.twoPhase() {
			sess.forgetEnqueued(ns, key)
			sl.set(flagTwoPhase, false)
			sh.watchEventLocked(evAcquire, sl.res.key())
			sh.armLocked(&sl.timer, now.After(sh.leaseOf(sl)))
		}
		sh.touchLocked(r, now)
		return sh.grantResult(sl), true
	}
	for sl := sh.queueOf(r).head; sl != nil; sl = sl.next {
		if sl.sess != sess || sl.writer() != m.writer || sl.elect() {
			continue
		}
		if sl.twoPhase() {
			sess.forgetEnqueued(ns, key)
			sl.set(flagTwoPhase, false)
		}
		if timeoutMs == 0 {
			sh.timeoutWaiterLocked(sl, now)
			return status(vocab.StatusTimeout), true
		}
		sl.set(flagBlocked, true)
		sh.armLocked(&sl.timer, now.After(timeoutMs))
		sh.touchLocked(r, now)
		return Result{Blocked: true}, true
	}
	return Result{}, false
}
