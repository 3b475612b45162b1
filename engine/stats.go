package engine

import (
	"encoding/json"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"

	"github.com/valyala/bytebufferpool"
)

// statsDoc is the stats document (spec §F.1) in the field order of
// dflockd's redis-feats line, whose shape is a superset of v2's: the v2
// fields come first-class, the newer arrays are extras v2 clients ignore.
// Arrays are never null (§I.24). What differs by profile is inside the
// entries: rf lists limit-1 resources of its one map as locks and shows
// their fence.
type statsDoc struct {
	Connections    int           `json:"connections"`
	Locks          []lockStat    `json:"locks"`
	Semaphores     []semStat     `json:"semaphores"`
	RWLocks        []rwStat      `json:"rw_locks"`
	IdleLocks      []idleStat    `json:"idle_locks"`
	IdleSemaphores []idleStat    `json:"idle_semaphores"`
	Counters       []counterStat `json:"counters"`
	KVEntries      []kvStat      `json:"kv_entries"`
	Lists          []listStat    `json:"lists"`
	SignalChannels []signalStat  `json:"signal_channels"`
	WatchChannels  []watchStat   `json:"watch_channels"`
	Barriers       []barrierStat `json:"barriers"`
	Fence          *fenceStat    `json:"fence,omitempty"`
}

// statsDocV1 is the stats document of dflockd v1.10 (spec §F.1): these
// five keys only.
type statsDocV1 struct {
	Connections    int        `json:"connections"`
	Locks          []lockStat `json:"locks"`
	Semaphores     []semStat  `json:"semaphores"`
	IdleLocks      []idleStat `json:"idle_locks"`
	IdleSemaphores []idleStat `json:"idle_semaphores"`
}

// fenceStat shows the fence allocator: the last fence issued, the ceiling
// durable on disk (with --fence-state-file), and the persister's counters.
type fenceStat struct {
	Last     uint64 `json:"last"`
	Ceiling  uint64 `json:"ceiling,omitempty"`
	Durable  bool   `json:"durable"`
	Persists uint64 `json:"persists"`
	Stalls   uint64 `json:"stalls"`
	Failed   bool   `json:"failed"`
}

func (e *Engine) fenceStat() *fenceStat {
	a, ok := e.cfg.Fences.(interface{ Stats() fence.Stats })
	if !ok {
		return nil
	}
	st := a.Stats()
	fs := &fenceStat{Last: st.Last, Durable: st.Durable, Persists: st.Persists, Stalls: st.Stalls, Failed: st.Failed}
	if st.Durable {
		fs.Ceiling = st.Ceiling
	}
	return fs
}

type lockStat struct {
	Key            string  `json:"key"`
	OwnerConnID    uint64  `json:"owner_conn_id"`
	LeaseExpiresIn float64 `json:"lease_expires_in_s"`
	Waiters        int     `json:"waiters"`
	Fence          uint64  `json:"fence,omitempty"` // rf only
}

// rwStat: fence is the highest among the holders (spec §F.1).
type rwStat struct {
	Key     string `json:"key"`
	Readers int    `json:"readers"`
	Writer  bool   `json:"writer"`
	Fence   uint64 `json:"fence,omitempty"`
	Waiters int    `json:"waiters"`
}

type semStat struct {
	Key     string `json:"key"`
	Limit   int    `json:"limit"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
}

type idleStat struct {
	Key   string  `json:"key"`
	IdleS float64 `json:"idle_s"`
}

type counterStat struct {
	Key   string  `json:"key"`
	Value int64   `json:"value"`
	IdleS float64 `json:"idle_s"`
}

type barrierStat struct {
	Key          string  `json:"key"`
	Count        int     `json:"count"`
	Participants int     `json:"participants"`
	IdleS        float64 `json:"idle_s"`
}

type watchStat struct {
	Pattern  string `json:"pattern"`
	Watchers int    `json:"watchers"`
}

type signalStat struct {
	Pattern   string `json:"pattern"`
	Group     string `json:"group,omitempty"`
	Listeners int    `json:"listeners"`
}

type listStat struct {
	Key        string  `json:"key"`
	Len        int     `json:"len"`
	PopWaiters int     `json:"pop_waiters,omitempty"`
	IdleS      float64 `json:"idle_s"`
}

type kvStat struct {
	Key      string  `json:"key"`
	ValueLen int     `json:"value_len"`
	TTL      int64   `json:"ttl"` // seconds left, 0 = none
	IdleS    float64 `json:"idle_s"`
}

// statsCollector gathers entries shard by shard.
type statsCollector struct {
	locks               []lockStat
	sems                []semStat
	rw                  []rwStat
	idleLocks, idleSems []idleStat
	counters            []counterStat
	kv                  []kvStat
	lists               []listStat
	barriers            []barrierStat
}

// signalStats lists subscriptions by (pattern, group); [] when none
// (spec §I.24).
func (e *Engine) signalStats() []signalStat {
	out := []signalStat{}
	for _, p := range e.subs.Patterns() {
		out = append(out, signalStat{Pattern: p.Pattern, Group: p.Group, Listeners: p.Subscribers})
	}
	return out
}

// watchStats lists watched patterns; [] when none (spec §I.24).
func (e *Engine) watchStats() []watchStat {
	out := []watchStat{}
	for _, p := range e.watches.Patterns() {
		out = append(out, watchStat{Pattern: p.Pattern, Watchers: p.Subscribers})
	}
	return out
}

func rwStatOf(r *resource) rwStat {
	st := rwStat{Key: r.key, Waiters: r.queue.n}
	for h := r.holders.head; h != nil; h = h.next {
		if h.writer {
			st.Writer = true
		} else {
			st.Readers++
		}
		st.Fence = max(st.Fence, h.token.Fence)
	}
	return st
}

func seconds(ms timerwheel.Tick) float64 { return float64(ms) / 1000 }

// AppendStats appends the stats JSON (one line, no LF) to dst.
func (e *Engine) AppendStats(dst []byte, connections int) []byte {
	c := statsCollector{
		locks: []lockStat{}, sems: []semStat{}, rw: []rwStat{}, idleLocks: []idleStat{}, idleSems: []idleStat{},
		counters: []counterStat{}, kv: []kvStat{}, lists: []listStat{}, barriers: []barrierStat{},
	}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		e.collectLocked(sh, &c, e.clock.Now().Tick())
		sh.unlock()
	}
	var doc any = &statsDoc{
		Connections: connections, Locks: c.locks, Semaphores: c.sems, RWLocks: c.rw,
		IdleLocks: c.idleLocks, IdleSemaphores: c.idleSems, Counters: c.counters, KVEntries: c.kv,
		Lists: c.lists, SignalChannels: e.signalStats(), WatchChannels: e.watchStats(),
		Barriers: c.barriers, Fence: e.fenceStat(),
	}
	if e.cfg.Profile == parse.ProfileV1 {
		doc = &statsDocV1{Connections: connections, Locks: c.locks, Semaphores: c.sems,
			IdleLocks: c.idleLocks, IdleSemaphores: c.idleSems}
	}
	buf := bytebufferpool.Get()
	defer bytebufferpool.Put(buf)
	if err := json.NewEncoder(buf).Encode(doc); err != nil {
		panic("engine: stats document does not encode: " + err.Error())
	}
	b := buf.B
	return append(dst, b[:len(b)-1]...) // Encode ends with LF; the reply adds its own
}

// collectLocked adds one shard's entries. v2 reports locks and semaphores
// by namespace (spec §I.23: a limit-1 semaphore stays a semaphore); v1.10
// and the rf line have one map and list limit-1 resources as locks.
func (e *Engine) collectLocked(sh *shard, c *statsCollector, now timerwheel.Tick) {
	for ns, m := range sh.res {
		for _, r := range m {
			if r.rw {
				if !r.idle() { // idle read-write locks are not listed (§F.1)
					c.rw = append(c.rw, rwStatOf(r))
				}
				continue
			}
			asLock := namespace(ns) == nsLock && (!e.cfg.Profile.SharedLockSpace() || r.limit == 1)
			if r.idle() {
				is := idleStat{Key: r.key, IdleS: seconds(now - r.lastActive)}
				if asLock {
					c.idleLocks = append(c.idleLocks, is)
				} else {
					c.idleSems = append(c.idleSems, is)
				}
				continue
			}
			if !asLock {
				c.sems = append(c.sems, semStat{Key: r.key, Limit: int(r.limit), Holders: r.holders.n, Waiters: r.queue.n})
				continue
			}
			ls := lockStat{Key: r.key, Waiters: r.queue.n}
			if h := r.holders.head; h != nil {
				ls.OwnerConnID = h.sess.ID
				ls.LeaseExpiresIn = max(0, seconds(h.timer.Deadline()-now))
				if e.rf() {
					ls.Fence = h.token.Fence
				}
			}
			c.locks = append(c.locks, ls)
		}
	}
	for k, ctr := range sh.counters {
		c.counters = append(c.counters, counterStat{Key: k, Value: ctr.value, IdleS: seconds(now - ctr.lastActive)})
	}
	for k, b := range sh.barriers {
		c.barriers = append(c.barriers, barrierStat{Key: k, Count: b.count, Participants: b.parts.n, IdleS: seconds(now - b.lastActive)})
	}
	for k, l := range sh.lists {
		c.lists = append(c.lists, listStat{Key: k, Len: l.len(), PopWaiters: l.waiters.n, IdleS: seconds(now - l.lastActive)})
	}
	for k, kv := range sh.kv {
		if kv.expired(timerwheel.Of(now)) {
			continue
		}
		st := kvStat{Key: k, ValueLen: len(kv.value), IdleS: seconds(now - kv.lastActive)}
		if kv.timer.Armed() {
			st.TTL = int64(kv.timer.Deadline()-now+999) / 1000
		}
		c.kv = append(c.kv, st)
	}
}

// GC prunes lock and semaphore keys idle for --gc-max-idle (spec §D.6).
func (e *Engine) GC() {
	maxIdle := e.cfg.GCMaxIdle.Milliseconds()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		sh.gcLocked(e.clock.Now(), maxIdle)
		sh.unlock()
	}
}

// Drain cancels every parked acquire and wait with error, for graceful
// shutdown (spec §D.5, §I.29); a request that would wait from now on gets
// error at once. (The v2 profile refuses every request during a drain
// before it reaches the engine; v1.10 goes on serving them.)
func (e *Engine) Drain() {
	e.draining.Store(true)
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		now := e.clock.Now()
		for _, m := range sh.res {
			for _, r := range m {
				for sl := r.queue.head; sl != nil; {
					next := sl.next
					if sl.blocked {
						sess, tag := sl.sess, sl.tag
						r.queue.remove(sl)
						sh.freeSlotLocked(sl)
						e.notify.Deliver(sess, Result{Status: parse.StatusError, Tag: tag})
					}
					sl = next
				}
				sh.handOffLocked(r, now) // readers behind a dropped writer
			}
		}
		for _, b := range sh.barriers {
			for w := b.parts.head; w != nil; w = b.parts.head {
				sh.endBarrierWaitLocked(w)
				e.notify.Deliver(w.sess, status(parse.StatusError))
			}
			sh.dropBarrierIfEmptyLocked(b)
		}
		for _, l := range sh.lists {
			for w := l.waiters.head; w != nil; w = l.waiters.head {
				sh.endPopLocked(w)
				e.notify.Deliver(w.sess, status(parse.StatusError))
			}
			sh.dropEmptyListLocked(l)
		}
		sh.unlock()
	}
}

// Keys reports the number of live lock and semaphore keys.
func (e *Engine) Keys() int { return int(e.keys.Load()) }
