package engine

import (
	"math"
	"sync"
	"unsafe"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// namespace separates locks from semaphores: v2 keeps them apart, so the
// same name can be both (spec §B.2, §I.6).
type namespace uint8

const (
	nsLock namespace = iota
	nsSem
	numNamespaces
)

// resource is a lock or semaphore key with its holders and FIFO queue.
// There is one per live key, so its size is much of the memory a held
// lock costs (issue #37). Its key follows it in the same allocation: a
// resource is the head of a resourceN, whose length byte and key bytes
// come right after these 24 bytes, or, for a key too long for those, of
// a resourceOut (resKeyOut). So a key of up to 23 bytes costs nothing
// beyond the 48-byte size class, where a resource alone took 64 bytes
// before and its key's string header and bytes 16 and 16 to 64 more.
// Its FIFO queue is in the shard's queues (shard.queueOf): most held
// locks never see a waiter, and a pointer to one would cost each of them
// the step from one size class to the next.
type resource struct {
	// holders is the head of the holders' list, linked through the
	// slots' next (nil-terminated) and prev; the head's prev is the tail,
	// so that one pointer serves where a list needs two (slot.go).
	holders *slot
	// lastActive is the last acquire, enqueue, wait, renew or release that
	// touched the key (a wrong token does not count, spec §D.6).
	lastActive timerwheel.Tick
	limit      int32 // locks 1, semaphores N; unused by read-write locks
	// bits holds the number of holders (below resWaiting) and, above it,
	// whether its queue holds a waiter, whether it has a queue at all,
	// where the key is, the namespace and whether it is a read-write lock
	// (spec §B.4: readers share, a writer is alone).
	bits uint32
}

const (
	resWaiting = 1 << 27 // bits: its queue holds a waiter
	resQueue   = 1 << 28 // bits: it has a queue, in its shard's queues
	resKeyOut  = 1 << 29 // bits: the key is a resourceOut's string
	resNS      = 1 << 30 // bits: the namespace is nsSem
	resRW      = 1 << 31 // bits: a read-write lock
	resHolders = resWaiting - 1
)

// The allocations a resource heads, one per size class up to 96 bytes:
// the key's length, then its bytes, right after the resource.
type (
	resource23 struct {
		resource
		n uint8
		k [23]byte
	}
	resource39 struct {
		resource
		n uint8
		k [39]byte
	}
	resource55 struct {
		resource
		n uint8
		k [55]byte
	}
	resource71 struct {
		resource
		n uint8
		k [71]byte
	}
	// resourceOut heads a key longer than 71 bytes, held as a string.
	resourceOut struct {
		resource
		key string
	}
)

// key is r's key. It aliases r's allocation, which never changes: it
// stays valid for as long as it is kept.
func (r *resource) key() string {
	if r.bits&resKeyOut != 0 {
		return (*resourceOut)(unsafe.Pointer(r)).key
	}
	p := unsafe.Add(unsafe.Pointer(r), unsafe.Sizeof(resource{}))
	return unsafe.String((*byte)(unsafe.Add(p, 1)), *(*uint8)(p))
}

// namespace is the namespace r is kept in.
func (r *resource) namespace() namespace {
	if r.bits&resNS != 0 {
		return nsSem
	}
	return nsLock
}

// isRW reports whether r is a read-write lock.
func (r *resource) isRW() bool { return r.bits&resRW != 0 }

// nHolders is the number of r's holders.
func (r *resource) nHolders() int { return int(r.bits & resHolders) }

// noWaiters is the queue of every resource that has had no waiter yet:
// shared and never written (slotList.pushBack refuses it; nothing else
// writes a list that holds no slot).
var noWaiters slotList

// newResource returns a resource with no holder and no waiter, its key a
// copy of key.
func newResource[K string | []byte](key K, ns namespace, limit int32, rw bool, lastActive timerwheel.Tick) *resource {
	if ns >= numNamespaces {
		panic("engine: resource of an unknown namespace")
	}
	var r *resource
	switch n := len(key); {
	case n <= 23:
		x := &resource23{n: uint8(n)}
		copy(x.k[:], key)
		r = &x.resource
	case n <= 39:
		x := &resource39{n: uint8(n)}
		copy(x.k[:], key)
		r = &x.resource
	case n <= 55:
		x := &resource55{n: uint8(n)}
		copy(x.k[:], key)
		r = &x.resource
	case n <= 71:
		x := &resource71{n: uint8(n)}
		copy(x.k[:], key)
		r = &x.resource
	default:
		x := &resourceOut{key: string(key)}
		r = &x.resource
		r.bits |= resKeyOut
	}
	r.limit, r.lastActive = limit, lastActive
	if ns == nsSem {
		r.bits |= resNS
	}
	if rw {
		r.bits |= resRW
	}
	return r
}

// waiting reports whether r's queue holds a waiter.
func (r *resource) waiting() bool { return r.bits&resWaiting != 0 }

func (r *resource) idle() bool { return r.holders == nil && !r.waiting() }

// queueOf returns r's FIFO queue: &noWaiters until r's first waiter, then
// a list of its own, kept for r's life in the shard's queues (so that a
// busy key's hand-offs do not allocate).
func (s *shard) queueOf(r *resource) *slotList {
	if r.bits&resQueue == 0 {
		return &noWaiters
	}
	if s.lastQueue.r == r {
		return s.lastQueue.q
	}
	q := s.queues[r]
	s.lastQueue.r, s.lastQueue.q = r, q
	return q
}

// pushWaiterLocked appends sl to r's queue, giving r one first.
func (s *shard) pushWaiterLocked(r *resource, sl *slot) {
	q := s.queueOf(r)
	if r.bits&resQueue == 0 {
		if s.queues == nil {
			s.queues = make(map[*resource]*slotList)
		}
		q = new(slotList)
		s.queues[r] = q
		r.bits |= resQueue
		s.lastQueue.r, s.lastQueue.q = r, q
	}
	q.pushBack(sl)
	r.bits |= resWaiting
}

// removeWaiterLocked takes sl out of r's queue.
func (s *shard) removeWaiterLocked(r *resource, sl *slot) {
	q := s.queueOf(r)
	q.remove(sl)
	if q.n == 0 {
		r.bits &^= resWaiting
	}
}

// fits reports whether one more holder of the given side may hold r now.
// A writer of a read-write lock holds alone, so a held write side is the
// only holder and shows at the head.
func (r *resource) fits(writer bool) bool {
	if !r.isRW() {
		return r.nHolders() < int(r.limit)
	}
	if writer {
		return r.holders == nil
	}
	return r.holders == nil || !r.holders.writer()
}

// mode is what an acquire asks of a resource: a slot of a lock (limit 1)
// or semaphore (limit N), or one side of a read-write lock.
type mode struct {
	limit  int
	rw     bool
	writer bool
	elect  bool // an elect: a lock acquire whose grant elects a leader
}

// shard owns a slice of the keyspace. Everything below mu is guarded by it.
type shard struct {
	mu    sync.Mutex // guards every field below except eng and index
	eng   *Engine
	index int
	res   [numNamespaces]resTable // the resources by key (restable.go)
	// Key spaces of the redis-feats primitives, separate from locks.
	counters map[string]*counter
	kv       map[string]*kvEntry
	lists    map[string]*list
	barriers map[string]*barrier
	// elections holds the leader watchers (observers and elected holders)
	// per election name; names without watchers have no entry.
	elections map[string]*election
	// wheel is nil until the shard's first timer: a wheel is 3 KB, and
	// most of the shards of an idle server never arm one (issue #21).
	// While it is nil, idleNow is the time it would have: that of the
	// latest Advance, as an empty wheel keeps it.
	wheel   *timerwheel.Wheel
	idleNow timerwheel.Tick
	// published is the earliest deadline this shard has told the driver
	// about; only an earlier one needs telling.
	published timerwheel.Tick
	free      *slot // singly linked through next
	nfree     int   // length of free, at most maxFree
	maxFree   int   // freeSlots over the shards, at least minFreeSlots
	// lapsed holds the shard's lapsed grants (slotLapsed: two-phase, and
	// in rf expired ones nobody waited behind), linked through prev/next, so that the GC
	// can forget them: nothing else would, and a session that never sends
	// w could pile them up for as long as it stays connected.
	lapsed slotList
	// lapsedFences indexes by fence the lapsed grants that are not
	// two-phase: in the rf profile an expired grant nobody waited behind
	// lapses so that its renew answers error_lease_expired (lock.go,
	// expireHolderLocked). Nil until the first.
	lapsedFences map[uint64]*slot
	// queues holds the FIFO queue of each resource that has had a waiter
	// (resQueue), for the resource's life. Nil until the first.
	queues map[*resource]*slotList
	// lastQueue is the latest queue queueOf found: a busy key's waits
	// and hand-offs then skip the map. The GC clears it with its key.
	lastQueue struct {
		r *resource
		q *slotList
	}
	// extras holds what a slot rarely has and has no room for: the tag
	// of a tagged acquire, a lease of 2^32 ms or more (slot.go). Nil
	// until the first.
	extras map[*slot]slotExtra
	// fx collects the effects of the command holding the lock: set by
	// lock, cleared by unlock.
	fx *Effects
	// counts are this shard's share of Engine.Metrics: plain increments,
	// since the shard lock is held anyway.
	counts shardCounts
	// obs is the observatory's event ring and slot times (events.go);
	// nil when Config.Events is 0.
	obs *shardObs
	_   [64]byte // keep neighbouring shards' mutexes off one cache line
}

func (s *shard) init(e *Engine, i int, now timerwheel.Tick) {
	s.eng = e
	s.index = i
	for n := range s.res {
		s.res[n] = newResTable()
	}
	s.counters = make(map[string]*counter)
	s.kv = make(map[string]*kvEntry)
	s.lists = make(map[string]*list)
	s.barriers = make(map[string]*barrier)
	s.elections = make(map[string]*election)
	s.idleNow = now
	s.published = math.MaxInt64
	s.maxFree = max(minFreeSlots, freeSlots/len(e.shards))
	if e.cfg.Events > 0 {
		s.obs = newShardObs(e.cfg.Events, len(e.shards))
	}
}

// lock takes the shard for a command whose effects go to fx.
func (s *shard) lock(fx *Effects) {
	s.mu.Lock()
	s.fx = fx
}

func (s *shard) unlock() {
	s.fx = nil
	s.mu.Unlock()
}

// deliverLocked records a late reply or a push for sess.
func (s *shard) deliverLocked(sess *session, r Result) { s.fx.add(sess.id, r) }

// lookupLocked finds a resource without allocating.
func (s *shard) lookupLocked(ns namespace, key []byte) *resource {
	return s.res[ns].get(key)
}

// createLocked adds a resource, or returns nil when --max-locks is reached.
func (s *shard) createLocked(ns namespace, key []byte, m mode, now timerwheel.Instant) *resource {
	e := s.eng
	if e.keys.Add(1) > int64(e.cfg.MaxLocks) {
		e.keys.Add(-1)
		return nil
	}
	r := newResource(key, ns, int32(m.limit), m.rw, now.Tick())
	s.res[ns].put(r)
	return r
}

// touchLocked records activity on r, which postpones its GC.
func (s *shard) touchLocked(r *resource, now timerwheel.Instant) { r.lastActive = now.Tick() }

// gcLocked prunes resources idle for at least maxIdle ms. It scans the
// shard's maps, as dflockd does: a few hundred keys per shard every
// --gc-interval cost less than keeping every key on an idle list. It has
// no effects on sessions: leases end by their timers, not here.
func (s *shard) gcLocked(now timerwheel.Instant, maxIdle int64) {
	old := func(t timerwheel.Tick) bool { return now.Tick()-t >= timerwheel.Tick(maxIdle) }
	// A lapsed grant is forgotten with its key, as dflockd forgets it when
	// it evicts the key's state: its w then answers error_not_enqueued.
	// An rf expired grant (not two-phase) is also forgotten once its lease
	// ended --gc-max-idle ago, as its key would be if nothing else held
	// it: a busy key whose holders keep letting their leases run out
	// must not pile records up (renew then answers error).
	for sl := s.lapsed.head; sl != nil; {
		next := sl.next
		if r := sl.res; r.idle() && old(r.lastActive) || !sl.twoPhase() && old(sl.timer.Deadline()) {
			s.freeSlotLocked(sl)
		}
		sl = next
	}
	for i := range s.res {
		n := s.res[i].sweep(func(r *resource) bool {
			if !r.idle() || !old(r.lastActive) {
				return false
			}
			if r.bits&resQueue != 0 {
				delete(s.queues, r) // called once for a resource it drops
				if s.lastQueue.r == r {
					s.lastQueue.r, s.lastQueue.q = nil, nil
				}
			}
			return true
		})
		s.eng.keys.Add(-int64(n))
	}
	// Zero counters go like idle locks; non-zero ones never expire (§B.5).
	for k, c := range s.counters {
		if c.value == 0 && old(c.lastActive) {
			delete(s.counters, k)
			s.eng.forgetKey(c.tenant)
		}
	}
	// dflockd's redis-feats line also drops KV entries without a TTL after
	// --gc-max-idle without access (§I.28); only the rf profile does that.
	if s.eng.rf() {
		for _, kv := range s.kv {
			if !kv.hasTTL && old(kv.lastActive) {
				s.deleteKVLocked(kv)
			}
		}
	}
}

// newSlotLocked takes a slot from the free list.
func (s *shard) newSlotLocked(r *resource, sess *session) *slot {
	sl := s.free
	if sl != nil {
		s.free = sl.next
		s.nfree--
		sl.next = nil
	} else {
		sl = &slot{}
		sl.timer.Kind = timerSlot
	}
	sl.res, sl.sess = r, sess
	return sl
}

// lapseLocked keeps sl, which left its resource's holders, as a lapsed
// grant (slotLapsed): on the shard's list for the GC and, unless it is
// two-phase (w finds those through its session), by fence for renew.
func (s *shard) lapseLocked(sl *slot) {
	sl.setState(slotLapsed)
	s.lapsed.pushBack(sl)
	if !sl.twoPhase() {
		if s.lapsedFences == nil {
			s.lapsedFences = make(map[uint64]*slot)
		}
		s.lapsedFences[sl.fence] = sl
	}
}

// freeSlotLocked returns a slot to the free list and invalidates records of it.
func (s *shard) freeSlotLocked(sl *slot) {
	if sl.state() == slotLapsed {
		s.lapsed.remove(sl)
		if !sl.twoPhase() {
			delete(s.lapsedFences, sl.fence)
		}
	}
	s.cancelLocked(&sl.timer)
	s.forgetSlotLocked(sl)
	sl.gen.Add(1)
	sl.setState(slotFree)
	if sl.has(flagExtra) {
		delete(s.extras, sl)
	}
	sl.res, sl.sess = nil, nil
	sl.timer.Flags = 0 // state slotFree and no flags
	sl.lease, sl.fence = 0, 0
	sl.prev, sl.next = nil, nil
	if s.nfree >= s.maxFree {
		return // a burst's slots go back to the Go heap
	}
	sl.next = s.free
	s.free = sl
	s.nfree++
}

// freeSlots bounds the shards' free lists together (each gets its share,
// at least minFreeSlots): enough to serve the steady churn of grants and
// releases without allocating, while the slots of a burst of waiters
// (thousands on one shard) are not kept for the life of the process.
const (
	freeSlots    = 8192
	minFreeSlots = 32
)

// armLocked (re)starts a timer of this shard and tells the driver if this
// is now the shard's earliest deadline.
func (s *shard) armLocked(n *timerwheel.Node, deadline timerwheel.Tick) {
	if s.wheel == nil {
		s.wheel = timerwheel.New(s.idleNow)
	}
	s.wheel.Reset(n, deadline)
	if deadline < s.published {
		s.published = deadline
		if f := s.eng.cfg.OnDeadline; f != nil {
			f(s.index, deadline)
		}
	}
}

// cancelLocked disarms a timer of this shard, if armed.
func (s *shard) cancelLocked(n *timerwheel.Node) {
	if s.wheel != nil {
		s.wheel.Cancel(n)
	}
}

// advanceLocked fires the shard's timers due at now (see Wheel.Advance).
func (s *shard) advanceLocked(now timerwheel.Tick, fire func(*timerwheel.Node)) {
	if s.wheel == nil {
		s.idleNow = max(s.idleNow, now)
		return
	}
	s.wheel.Advance(now, 0, fire)
}

// nextDeadlineLocked is the earliest deadline of the shard's timers.
func (s *shard) nextDeadlineLocked() (timerwheel.Tick, bool) {
	if s.wheel == nil {
		return 0, false
	}
	return s.wheel.NextDeadline()
}
