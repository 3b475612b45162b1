package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// barrier gathers count participants under a key of the barrier key space
// (spec §B.11): when the count-th arrives, all of them return ok and the
// barrier is gone, so the name can start a new generation.
//
// In the rf profile a barrier breaks as soon as a participant leaves
// before the trip (its timeout, a disconnect): every other participant
// returns timeout at once, as dflockd's redis-feats line does (§I.26). In
// v2 the leaver simply leaves and the others keep waiting.
type barrier struct {
	key        string
	count      int
	parts      barrierList
	lastActive timerwheel.Tick
}

// barrierWaiter is a session parked in bwait. Like a pop waiter, only the
// session's goroutine writes session.bar; done is set under the shard lock.
type barrierWaiter struct {
	timer timerwheel.Node
	sh    *shard
	b     *barrier
	sess  *session
	ln    waitLinks[barrierWaiter]
	done  bool
}

type barrierList = waitList[barrierWaiter, *barrierWaiter]

func (w *barrierWaiter) links() *waitLinks[barrierWaiter] { return &w.ln }

func (e *Engine) bwait(s *session, r *vocab.Request, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(r.Key)
	sh.lock(fx)
	defer sh.unlock()
	b := sh.barriers[string(r.Key)]
	if b == nil {
		if !e.admitKey(nil) {
			return status(vocab.StatusErrorMaxKeys)
		}
		b = &barrier{key: string(r.Key), count: int(r.N)}
		sh.barriers[b.key] = b
	} else if b.count != int(r.N) {
		return status(vocab.StatusErrorBarrierCountMismatch)
	}
	b.lastActive = now.Tick()
	if b.parts.n+1 >= b.count {
		sh.tripLocked(b, vocab.StatusOK)
		return status(vocab.StatusOK)
	}
	if r.Timeout == 0 {
		// Not the trip and not waiting: in rf this arrival breaks it.
		if e.rf() {
			sh.tripLocked(b, vocab.StatusTimeout)
		} else {
			sh.dropBarrierIfEmptyLocked(b)
		}
		return status(vocab.StatusTimeout)
	}
	if e.draining.Load() {
		sh.dropBarrierIfEmptyLocked(b) // a drain ends every wait (spec §D.5)
		return status(vocab.StatusError)
	}
	w := &barrierWaiter{sh: sh, b: b, sess: s}
	w.timer.Kind = timerBarrier
	b.parts.pushBack(w)
	s.bar = w
	sh.armLocked(&w.timer, now.After(r.Timeout*1000))
	return Result{Blocked: true}
}

// tripLocked ends the barrier: every participant gets st and the key is
// free for the next generation.
func (sh *shard) tripLocked(b *barrier, st vocab.Status) {
	for w := b.parts.head; w != nil; w = b.parts.head {
		sh.endBarrierWaitLocked(w)
		sh.deliverLocked(w.sess, status(st))
	}
	delete(sh.barriers, b.key)
	sh.eng.forgetKey(nil)
}

func (sh *shard) endBarrierWaitLocked(w *barrierWaiter) {
	w.b.parts.remove(w)
	sh.cancelLocked(&w.timer)
	w.done = true
}

// leaveBarrierLocked takes a participant out before the trip (timeout or
// disconnect); in rf that breaks the barrier for the others.
func (sh *shard) leaveBarrierLocked(w *barrierWaiter) {
	sh.endBarrierWaitLocked(w)
	if sh.eng.rf() && w.b.parts.n > 0 {
		sh.tripLocked(w.b, vocab.StatusTimeout)
		return
	}
	sh.dropBarrierIfEmptyLocked(w.b)
}

func (sh *shard) dropBarrierIfEmptyLocked(b *barrier) {
	if b.parts.n == 0 && sh.barriers[b.key] == b {
		delete(sh.barriers, b.key)
		sh.eng.forgetKey(nil)
	}
}

// barrierTimedOutLocked answers a participant whose timeout fired.
func (sh *shard) barrierTimedOutLocked(w *barrierWaiter) {
	sh.leaveBarrierLocked(w)
	sh.deliverLocked(w.sess, status(vocab.StatusTimeout))
}
