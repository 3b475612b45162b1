package engine

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Stats reports the state for the stats document (spec §F.1) as of at;
// connections is the caller's count. Arrays are sorted by key (then
// pattern and group), so the same state always reports the same. The
// fence state is the caller's to add: it knows the durable ceiling.
func (e *Engine) Stats(at timerwheel.Instant, connections int) *vocab.Stats {
	return e.stats(at, connections, true)
}

// LockStats is Stats with only what the v1 and v2 documents show: locks
// and semaphores, busy and idle (the other arrays are empty).
func (e *Engine) LockStats(at timerwheel.Instant, connections int) *vocab.Stats {
	return e.stats(at, connections, false)
}

func (e *Engine) stats(at timerwheel.Instant, connections int, all bool) *vocab.Stats {
	st := &vocab.Stats{
		Connections: connections,
		Locks:       []vocab.LockStat{}, Semaphores: []vocab.SemStat{}, RWLocks: []vocab.RWStat{},
		IdleLocks: []vocab.IdleStat{}, IdleSemaphores: []vocab.IdleStat{}, Counters: []vocab.CounterStat{},
		KVEntries: []vocab.KVStat{}, Lists: []vocab.ListStat{}, Barriers: []vocab.BarrierStat{},
		SignalChannels: []vocab.SignalStat{}, WatchChannels: []vocab.WatchStat{},
	}
	if all {
		st.SignalChannels, st.WatchChannels = e.signalStats(), e.watchStats()
	}
	now := at.Tick()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		e.collectStatsLocked(sh, st, now, all)
		sh.mu.Unlock()
	}
	byKey := func(a, b string) int { return strings.Compare(a, b) }
	slices.SortFunc(st.Locks, func(a, b vocab.LockStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.Semaphores, func(a, b vocab.SemStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.RWLocks, func(a, b vocab.RWStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.IdleLocks, func(a, b vocab.IdleStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.IdleSemaphores, func(a, b vocab.IdleStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.Counters, func(a, b vocab.CounterStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.KVEntries, func(a, b vocab.KVStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.Lists, func(a, b vocab.ListStat) int { return byKey(a.Key, b.Key) })
	slices.SortFunc(st.Barriers, func(a, b vocab.BarrierStat) int { return byKey(a.Key, b.Key) })
	return st
}

// signalStats lists subscriptions by (pattern, group).
func (e *Engine) signalStats() []vocab.SignalStat {
	out := []vocab.SignalStat{}
	for _, p := range e.subs.Patterns() {
		out = append(out, vocab.SignalStat{Pattern: p.Pattern, Group: p.Group, Listeners: p.Subscribers})
	}
	return out
}

// watchStats lists watched patterns.
func (e *Engine) watchStats() []vocab.WatchStat {
	out := []vocab.WatchStat{}
	for _, p := range e.watches.Patterns() {
		out = append(out, vocab.WatchStat{Pattern: p.Pattern, Watchers: p.Subscribers})
	}
	return out
}

func (e *Engine) rwStatOf(sh *shard, r *resource) vocab.RWStat {
	st := vocab.RWStat{Key: r.key(), Waiters: sh.queueOf(r).n}
	for h := r.holders; h != nil; h = h.next {
		if h.writer() {
			st.Writer = true
		} else {
			st.Readers++
		}
		st.Fence = max(st.Fence, h.fence)
	}
	return st
}

func seconds(ms timerwheel.Tick) float64 { return float64(ms) / 1000 }

// collectStatsLocked adds one shard's entries. v2 reports locks and
// semaphores by namespace (spec §I.23: a limit-1 semaphore stays a
// semaphore); v1.10 and the rf line have one map and list limit-1
// resources as locks. Lock entries carry their holder's fence; only the
// rf document shows it (parse.AppendStats).
func (e *Engine) collectStatsLocked(sh *shard, st *vocab.Stats, now timerwheel.Tick, all bool) {
	for ns := range sh.res {
		for r := range sh.res[ns].all {
			if r.isRW() {
				if all && !r.idle() { // idle read-write locks are not listed (§F.1)
					st.RWLocks = append(st.RWLocks, e.rwStatOf(sh, r))
				}
				continue
			}
			asLock := e.kindOf(namespace(ns), r) == KeyLock
			if r.idle() {
				is := vocab.IdleStat{Key: r.key(), IdleS: seconds(now - r.lastActive)}
				if asLock {
					st.IdleLocks = append(st.IdleLocks, is)
				} else {
					st.IdleSemaphores = append(st.IdleSemaphores, is)
				}
				continue
			}
			if !asLock {
				st.Semaphores = append(st.Semaphores, vocab.SemStat{Key: r.key(), Limit: int(r.limit), Holders: r.nHolders(), Waiters: sh.queueOf(r).n})
				continue
			}
			ls := vocab.LockStat{Key: r.key(), Waiters: sh.queueOf(r).n}
			if h := r.holders; h != nil {
				ls.OwnerConnID = h.sess.connID.Load()
				ls.LeaseExpiresIn = max(0, seconds(h.timer.Deadline()-now))
				ls.Fence = h.fence
			}
			st.Locks = append(st.Locks, ls)
		}
	}
	if !all {
		return
	}
	for k, ctr := range sh.counters {
		st.Counters = append(st.Counters, vocab.CounterStat{Key: k, Value: ctr.value, IdleS: seconds(now - ctr.lastActive)})
	}
	for k, b := range sh.barriers {
		st.Barriers = append(st.Barriers, vocab.BarrierStat{Key: k, Count: b.count, Participants: b.parts.n, IdleS: seconds(now - b.lastActive)})
	}
	for k, l := range sh.lists {
		st.Lists = append(st.Lists, vocab.ListStat{Key: k, Len: l.len(), PopWaiters: l.waiters.n, IdleS: seconds(now - l.lastActive)})
	}
	for k, kv := range sh.kv {
		if kv.expired(timerwheel.Of(now)) {
			continue
		}
		ks := vocab.KVStat{Key: k, ValueLen: len(kv.value), IdleS: seconds(now - kv.lastActive)}
		if kv.hasTTL {
			ks.TTL = int64(kv.timer.Deadline()-now+999) / 1000
		}
		st.KVEntries = append(st.KVEntries, ks)
	}
}

// gc prunes lock and semaphore keys (and the redis-feats primitives' idle
// keys) idle for --gc-max-idle at at (spec §D.6).
func (e *Engine) gc(at timerwheel.Instant, fx *Effects) {
	maxIdle := e.cfg.GCMaxIdle.Milliseconds()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock(fx)
		sh.gcLocked(at, maxIdle)
		sh.unlock()
	}
}

// drain cancels every parked acquire and wait with error, for graceful
// shutdown (spec §D.5, §I.29); a request that would wait from now on gets
// error at once. (The v2 profile refuses every request during a drain
// before it reaches the engine; v1.10 goes on serving them.) Resources
// are visited in key order, so that the hand-offs a drain can cause
// (readers queued behind a parked writer) take fences in the same order
// whatever the shard count.
func (e *Engine) drain(at timerwheel.Instant, fx *Effects) {
	e.draining.Store(true)
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock(fx)
		for _, b := range sh.barriers {
			for w := b.parts.head; w != nil; w = b.parts.head {
				sh.endBarrierWaitLocked(w)
				sh.deliverLocked(w.sess, status(vocab.StatusError))
			}
			sh.dropBarrierIfEmptyLocked(b)
		}
		for _, l := range sh.lists {
			for w := l.waiters.head; w != nil; w = l.waiters.head {
				sh.endPopLocked(w)
				sh.deliverLocked(w.sess, status(vocab.StatusError))
			}
			sh.dropEmptyListLocked(l)
		}
		sh.unlock()
	}
	e.visitInKeyOrder(fx, func(r *resource) bool { return r.waiting() }, func(sh *shard, r *resource) {
		for sl := sh.queueOf(r).head; sl != nil; {
			next := sl.next
			if sl.blocked() {
				sess, tag := sl.sess, sh.tagOf(sl)
				sh.removeWaiterLocked(r, sl)
				sh.freeSlotLocked(sl)
				sh.deliverLocked(sess, Result{Status: vocab.StatusError, Tag: tag})
			}
			sl = next
		}
		sh.handOffLocked(r, at) // readers behind a dropped writer
	})
}

// visitInKeyOrder runs f, under its shard's lock, on every lock, semaphore
// and read-write lock resource that pick selects (under the same lock, a
// moment before), in the order of their keys (then namespaces): commands
// that act on many keys at once must act in an order that does not
// depend on the shard count or on map iteration, since what they do can
// take fences and make effects.
func (e *Engine) visitInKeyOrder(fx *Effects, pick func(*resource) bool, f func(*shard, *resource)) {
	type ref struct {
		sh  *shard
		key string
		ns  namespace
	}
	var refs []ref
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				if pick(r) {
					refs = append(refs, ref{sh, r.key(), namespace(ns)})
				}
			}
		}
		sh.mu.Unlock()
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.ns, b.ns)) })
	for _, p := range refs {
		p.sh.lock(fx)
		if r := p.sh.res[p.ns].getString(p.key); r != nil && pick(r) {
			f(p.sh, r)
		}
		p.sh.unlock()
	}
}

// Keys reports the number of live lock and semaphore keys.
func (e *Engine) Keys() int { return int(e.keys.Load()) }

// Census counts the engine's keys (locks, semaphores, read-write locks,
// counters, KV entries, lists and barriers, each key once per kind; an
// election is its lock) and the claims held on its locks and semaphores, for a backup's
// summary. Like Digest, call it when the engine is quiet.
func (e *Engine) Census() (keys, held int) {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for ns := range sh.res {
			keys += sh.res[ns].len()
			for r := range sh.res[ns].all {
				held += r.nHolders()
			}
		}
		keys += len(sh.counters) + len(sh.kv) + len(sh.lists) + len(sh.barriers)
		sh.mu.Unlock()
	}
	return keys, held
}
