package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Time is an input like any command: Advance(at) fires every timer whose
// deadline has come by at (leases, acquire and wait timeouts, blocking
// pops, barriers, KV TTLs) through the same code as a command, and what
// they start (a lease handed to the next waiter) dates from at.
//
// Timers due by the same call fire in one order whatever the number of
// shards: by deadline, then by key, then in their wheel's order (one key's
// timers are always in one wheel). That matters because a firing can
// grant, and grants take fences from one counter: the same commands must
// hand out the same fences to the same holders. So Advance first collects
// the due timers of every shard it visits, then fires them in that order,
// checking each is still what it was when collected (an earlier firing may
// have granted a waiter whose timeout was also due, or freed a slot).

// dueTimer is a collected timer.
type dueTimer struct {
	node     *timerwheel.Node
	deadline timerwheel.Tick
	key      string
	sh       *shard
	seq      int    // collection order: the wheel's order within a shard
	gen      uint32 // a slot's generation, a KV entry's version, when collected
}

// advancer is Advance's scratch; calls are serialised by its mutex.
type advancer struct {
	mu  sync.Mutex
	due []dueTimer
	cur *shard
}

// Advance fires every timer of every shard due at at; the queues of the
// sessions whose waits that ends run then (queue.go).
func (e *Engine) Advance(at timerwheel.Instant, fx *Effects) {
	start := len(fx.List)
	e.advance(at, fx)
	e.resumeQueues(at, fx, start)
}

func (e *Engine) advance(at timerwheel.Instant, fx *Effects) {
	e.adv.mu.Lock()
	defer e.adv.mu.Unlock()
	for i := range e.shards {
		e.collectDue(&e.shards[i], at)
	}
	e.fireDue(at, fx)
	for i := range e.shards {
		e.shards[i].republish()
	}
}

// AdvanceShard is Advance for shard i alone, for a timer driver that
// tracks each shard's deadline (Config.OnDeadline); it returns the shard's
// next deadline.
func (e *Engine) AdvanceShard(i int, at timerwheel.Instant, fx *Effects) (next timerwheel.Tick, ok bool) {
	start := len(fx.List)
	next, ok = e.advanceShard(i, at, fx)
	e.resumeQueues(at, fx, start)
	return next, ok
}

func (e *Engine) advanceShard(i int, at timerwheel.Instant, fx *Effects) (next timerwheel.Tick, ok bool) {
	e.adv.mu.Lock()
	defer e.adv.mu.Unlock()
	sh := &e.shards[i]
	e.collectDue(sh, at)
	e.fireDue(at, fx)
	return sh.republish()
}

// collectDue (adv.mu held) moves sh's due timers into adv.due.
func (e *Engine) collectDue(sh *shard, at timerwheel.Instant) {
	sh.mu.Lock()
	e.adv.cur = sh
	sh.advanceLocked(at.Tick(), e.collectOne)
	e.adv.cur = nil
	sh.mu.Unlock()
}

// collectOne is the wheel's fire callback during collection: the node is
// disarmed and remembered, not acted on.
func (e *Engine) collectOne(n *timerwheel.Node) {
	d := dueTimer{node: n, deadline: n.Deadline(), sh: e.adv.cur, seq: len(e.adv.due)}
	switch n.Kind {
	case timerSlot:
		o := slotOf(n)
		d.key, d.gen = o.res.key(), o.gen.Load()
	case timerKV:
		o := kvOf(n)
		d.key, d.gen = o.key, o.ver
	case timerPop:
		d.key = popOf(n).l.key
	case timerBarrier:
		d.key = barrierWaiterOf(n).b.key
	default:
		panic(fmt.Sprintf("engine: timer of unknown kind %d", n.Kind))
	}
	e.adv.due = append(e.adv.due, d)
}

// fireDue fires the collected timers in order and empties the list.
func (e *Engine) fireDue(at timerwheel.Instant, fx *Effects) {
	due := e.adv.due
	if len(due) > 1 {
		slices.SortFunc(due, func(a, b dueTimer) int {
			return cmp.Or(cmp.Compare(a.deadline, b.deadline), strings.Compare(a.key, b.key), cmp.Compare(a.seq, b.seq))
		})
	}
	for i := range due {
		d := &due[i]
		d.sh.lock(fx)
		d.sh.fireLocked(d, at)
		d.sh.unlock()
		*d = dueTimer{}
	}
	e.adv.due = due[:0]
}

// fireLocked acts on a collected timer unless something changed it since:
// re-armed (renewed, or re-used for another purpose), freed, or ended.
func (s *shard) fireLocked(d *dueTimer, now timerwheel.Instant) {
	n := d.node
	if n.Armed() || n.Deadline() != d.deadline {
		return
	}
	switch n.Kind {
	case timerSlot:
		o := slotOf(n)
		if o.gen.Load() != d.gen {
			return
		}
		switch o.state() {
		case slotWaiting:
			s.timeoutWaiterLocked(o, now)
		case slotHolding:
			s.leaseEndedLocked(o, now)
		}
	case timerKV:
		if o := kvOf(n); s.kv[o.key] == o && o.ver == d.gen {
			s.deleteKVLocked(o)
		}
	case timerPop:
		if o := popOf(n); !o.done {
			s.popTimedOutLocked(o)
		}
	case timerBarrier:
		if o := barrierWaiterOf(n); !o.done {
			s.barrierTimedOutLocked(o)
		}
	}
}

// republish records the shard's next deadline as published and returns it.
func (s *shard) republish() (timerwheel.Tick, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next, ok := s.nextDeadlineLocked()
	if !ok {
		s.published = timerwheel.Tick(1<<63 - 1)
		return 0, false
	}
	s.published = next
	return next, true
}

// NextDeadline returns the earliest deadline of any armed timer, for a
// driver that must propose time (a cluster leader, which moves time only
// through replicated commands) rather than call AdvanceShard.
func (e *Engine) NextDeadline() (timerwheel.Tick, bool) {
	next, any := timerwheel.Tick(0), false
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		d, ok := sh.nextDeadlineLocked()
		sh.mu.Unlock()
		if ok && (!any || d < next) {
			next, any = d, true
		}
	}
	return next, any
}
