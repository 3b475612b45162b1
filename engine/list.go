package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// list is a deque of values under a key of the list key space (spec
// §B.7), with the FIFO of connections blocked in blpop/brpop on it.
// Values are strings copied from the request and never mutated, so a
// popped value may be used after the shard lock is released.
type list struct {
	key        string
	items      []string // items[head:] is the list, front first
	head       int
	waiters    popList
	lastActive timerwheel.Tick
	tenant     *Tenant // whose key it is (tenant.go); nil: nobody's
}

func (l *list) len() int { return len(l.items) - l.head }

func (l *list) pushFront(v string) {
	if l.head == 0 {
		// Make room at the front: double, and put the old items at the back.
		n := l.len()
		grown := make([]string, n+max(n, 4))
		l.head = len(grown) - n
		copy(grown[l.head:], l.items)
		l.items = grown
	}
	l.head--
	l.items[l.head] = v
}

func (l *list) pushBack(v string) { l.items = append(l.items, v) }

func (l *list) popFront() string {
	v := l.items[l.head]
	l.items[l.head] = ""
	l.head++
	if l.head == len(l.items) {
		l.items, l.head = l.items[:0], 0
	}
	return v
}

func (l *list) popBack() string {
	v := l.items[len(l.items)-1]
	l.items[len(l.items)-1] = ""
	l.items = l.items[:len(l.items)-1]
	if l.head == len(l.items) {
		l.items, l.head = l.items[:0], 0
	}
	return v
}

// popWaiter is a session parked in blpop/brpop. A session parks at most
// one request at a time, so it records at most one pop waiter.
//
// Only the session's goroutine writes session.pop; whoever ends the wait
// (a push, the timeout, Close, Drain) sets done under the shard lock.
type popWaiter struct {
	timer timerwheel.Node // the pop's timeout
	sh    *shard
	l     *list
	sess  *session
	ln    waitLinks[popWaiter]
	done  bool
	op    string // "blpop" or "brpop", for its watch event
}

type popList = waitList[popWaiter, *popWaiter]

func (w *popWaiter) links() *waitLinks[popWaiter] { return &w.ln }

// listOp serves the list commands.
func (e *Engine) listOp(id SessionID, r *vocab.Request, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(r.Key)
	sh.lock(fx)
	defer sh.unlock()
	l := sh.lists[string(r.Key)]
	switch r.Op {
	case vocab.OpLPush, vocab.OpRPush:
		return sh.pushLocked(id, l, r, now)
	case vocab.OpLLen:
		if l == nil {
			return Result{Status: vocab.StatusOK, Kind: KindInt}
		}
		return Result{Status: vocab.StatusOK, Kind: KindInt, Int: int64(l.len())}
	case vocab.OpLRange:
		return lrange(l, r.N, r.M)
	}
	// lpop, rpop, blpop, brpop
	if l != nil && l.len() > 0 {
		var v string
		if r.Op == vocab.OpLPop || r.Op == vocab.OpBLPop {
			v = l.popFront()
		} else {
			v = l.popBack()
		}
		l.lastActive = now.Tick()
		sh.dropEmptyListLocked(l)
		sh.watchEventLocked(r.Op.String(), l.key)
		return Result{Status: vocab.StatusOK, Kind: KindValue, Value: v}
	}
	if r.Op == vocab.OpLPop || r.Op == vocab.OpRPop || r.Timeout == 0 {
		return status(vocab.StatusNil)
	}
	if e.draining.Load() {
		return status(vocab.StatusError) // a drain ends every wait (spec §D.5)
	}
	if l == nil {
		// The list entry that holds the waiter counts as a key (§B.7).
		t := e.tenantOf(id)
		if !e.admitKey(t) {
			return status(vocab.StatusErrorMaxKeys)
		}
		l = &list{key: string(r.Key), tenant: t}
		sh.lists[l.key] = l
	}
	s := e.mustSession(id)
	w := &popWaiter{sh: sh, l: l, sess: s, op: r.Op.String()}
	w.timer.Kind = timerPop
	l.waiters.pushBack(w)
	l.lastActive = now.Tick()
	s.pop = w
	sh.armLocked(&w.timer, now.After(r.Timeout*1000))
	return Result{Blocked: true}
}

// pushLocked hands the value to the oldest parked popper, whichever end
// either side names, or stores it (spec §B.7).
func (sh *shard) pushLocked(id SessionID, l *list, r *vocab.Request, now timerwheel.Instant) Result {
	e := sh.eng
	if l != nil && l.waiters.n > 0 {
		w := l.waiters.head
		sh.endPopLocked(w)
		sh.deliverLocked(w.sess, Result{Status: vocab.StatusOK, Kind: KindValue, Value: string(r.Value)})
		sh.watchEventLocked(r.Op.String(), l.key)
		sh.watchEventLocked(w.op, l.key) // the popper's blpop/brpop succeeded too
		l.lastActive = now.Tick()
		n := int64(l.len())
		sh.dropEmptyListLocked(l)
		if e.rf() {
			n = 0 // the redis-feats line answers "ok 0" to a hand-off (§I.27)
		}
		return Result{Status: vocab.StatusOK, Kind: KindInt, Int: n}
	}
	if l == nil {
		t := e.tenantOf(id)
		if !e.admitKey(t) {
			return status(vocab.StatusErrorMaxKeys)
		}
		l = &list{key: string(r.Key), tenant: t}
		sh.lists[l.key] = l
	} else if e.cfg.MaxListLength > 0 && l.len() >= e.cfg.MaxListLength {
		return status(vocab.StatusErrorListFull)
	}
	if r.Op == vocab.OpLPush {
		l.pushFront(string(r.Value))
	} else {
		l.pushBack(string(r.Value))
	}
	l.lastActive = now.Tick()
	sh.watchEventLocked(r.Op.String(), l.key)
	return Result{Status: vocab.StatusOK, Kind: KindInt, Int: int64(l.len())}
}

// endPopLocked takes a waiter off its list and the timer wheel.
func (sh *shard) endPopLocked(w *popWaiter) {
	w.l.waiters.remove(w)
	sh.cancelLocked(&w.timer)
	w.done = true
}

// dropEmptyListLocked deletes a list with no items and no waiters: empty
// lists do not linger (§B.7).
func (sh *shard) dropEmptyListLocked(l *list) {
	if l.len() == 0 && l.waiters.n == 0 && sh.lists[l.key] == l {
		delete(sh.lists, l.key)
		sh.eng.forgetKey(l.tenant)
	}
}

// popTimedOutLocked answers a parked pop whose timeout fired with nil.
func (sh *shard) popTimedOutLocked(w *popWaiter) {
	sh.endPopLocked(w)
	sh.dropEmptyListLocked(w.l)
	sh.deliverLocked(w.sess, status(vocab.StatusNil))
}

// lrange returns items start..stop inclusive; negative indexes count from
// the end (spec §B.7). The caller encodes them (parse.AppendOKList); the
// strings are immutable, the slice is a copy.
func lrange(l *list, start, stop int64) Result {
	res := Result{Status: vocab.StatusOK, Kind: KindList}
	if l == nil {
		return res
	}
	n := int64(l.len())
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	stop = min(stop, n-1)
	if start <= stop {
		res.Items = append([]string(nil), l.items[l.head+int(start):l.head+int(stop)+1]...)
	}
	return res
}
