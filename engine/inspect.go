package engine

import (
	"cmp"
	"container/heap"
	"slices"
	"strings"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Read-only introspection for the lock observatory: the keys, their
// holders and FIFO queues, as of an instant. Like stats (stats.go) it
// visits shards one at a time under their locks, so each key is
// consistent in itself and the page as a whole is not a snapshot of one
// moment. Answers are bounded: a page holds at most MaxKeyPage keys and
// each key at most MaxListed holders and waiters (with their totals).

// Bounds of an inspection.
const (
	// MaxKeyPage bounds a page of InspectKeys: a page is built in
	// memory, and a client reads further pages with the cursor.
	MaxKeyPage = 1000
	// MaxListed bounds the holders, and separately the waiters, listed
	// per key: a queue of thousands is summed up by its total.
	MaxListed = 100
)

// KeyKind is the kind of an entry of the keyspace.
type KeyKind uint8

const (
	KeyLock      KeyKind = iota + 1 // a lock (limit 1), elections included
	KeySemaphore                    // a semaphore (limit N)
	KeyRWLock                       // a read-write lock
	KeyCounter
	KeyKV
	KeyList
	KeyBarrier
	numKeyKinds
)

var keyKindNames = [...]string{
	KeyLock: "lock", KeySemaphore: "semaphore", KeyRWLock: "rwlock", KeyCounter: "counter",
	KeyKV: "kv", KeyList: "list", KeyBarrier: "barrier",
}

// String is the kind's name in the HTTP API.
func (k KeyKind) String() string {
	if k > 0 && k < numKeyKinds {
		return keyKindNames[k]
	}
	return "unknown"
}

// KeyKindNamed returns the kind String names.
func KeyKindNamed(name string) (KeyKind, bool) {
	for k := KeyLock; k < numKeyKinds; k++ {
		if keyKindNames[k] == name {
			return k, true
		}
	}
	return 0, false
}

// KeyKinds is a set of kinds; the empty set means every kind.
type KeyKinds uint16

// With returns s with k added.
func (s KeyKinds) With(k KeyKind) KeyKinds { return s | 1<<k }

// Has reports whether s selects k.
func (s KeyKinds) Has(k KeyKind) bool { return s == 0 || s&(1<<k) != 0 }

// kindOf classifies a lock-space resource the way stats lists it: v2
// keeps semaphores in their own namespace (a limit-1 semaphore stays a
// semaphore, spec §I.23); v1.10 and the rf line have one map, where a
// limit-1 resource is a lock.
func (e *Engine) kindOf(ns namespace, r *resource) KeyKind {
	switch {
	case r.isRW():
		return KeyRWLock
	case ns == nsLock && (!e.cfg.Profile.SharedLockSpace() || r.limit == 1):
		return KeyLock
	}
	return KeySemaphore
}

// KeyRef names an entry: a key of one kind (a lock and a semaphore may
// share a name in v2). It is the cursor of InspectKeys.
type KeyRef struct {
	Key  string
	Kind KeyKind
}

func compareRefs(a, b KeyRef) int {
	return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.Kind, b.Kind))
}

// KeyQuery selects a page of keys.
type KeyQuery struct {
	Prefix string
	Kinds  KeyKinds
	After  KeyRef // the page starts after this entry; zero: at the start
	Limit  int    // ≤ 0 or over MaxKeyPage: MaxKeyPage
}

// KeyState is one key as an inspection found it. Durations are in ms as
// of the inspection's instant; -1 where the engine does not know (the
// observatory off, or a claim restored from a snapshot).
type KeyState struct {
	Key  string
	Kind KeyKind
	// Limit is a semaphore's capacity (1 for locks, 0 otherwise).
	Limit int
	// Holders and Waiters (the FIFO, head first) of locks, semaphores
	// and read-write locks; Waiters are the pop waiters of a list and the
	// participants of a barrier. At most MaxListed each; the totals are
	// the full counts.
	Holders                    []HolderState
	Waiters                    []WaiterState
	HoldersTotal, WaitersTotal int
	// Observers: sessions observing the election of this lock's name.
	Observers int
	IdleMs    int64 // since the key's last activity
	Value     int64 // a counter's value
	ValueLen  int   // a KV entry's value length
	TTLMs     int64 // a KV entry's remaining TTL; -1 without one
	Len       int   // a list's length
	Count     int   // a barrier's participant count (its target)
}

// Claimant is the session of a claim.
type Claimant struct {
	Session SessionID
	ConnID  uint64 // owner_conn_id
	// Open: the session is still open. A closed session's hold stays
	// until its lease ends with --auto-release-on-disconnect=false, or
	// on a cluster whose leader changed.
	Open bool
}

// HolderState is one holder of a key.
type HolderState struct {
	Claimant
	Fence  uint64
	Writer bool // the write side of a read-write lock
	Elect  bool // granted by elect: the election's leader
	// Pending: granted to an enqueue (e, se) whose wait has not
	// observed it yet.
	Pending          bool
	LeaseMs          int64
	LeaseRemainingMs int64
	HeldMs           int64 // since the grant
	WaitedMs         int64 // how long it queued before the grant
	Renewals         int64
}

// WaiterState is one waiter of a key.
type WaiterState struct {
	Claimant
	Writer bool
	// Blocked: the session is parked on this wait (l, sl, rl, wl, w after
	// e, a pop, bwait); false for an enqueue whose w has not come yet.
	Blocked            bool
	WaitedMs           int64
	TimeoutRemainingMs int64 // -1: no timeout (a parked tagged acquire, an enqueue)
}

// candidate is an entry found by the first pass of InspectKeys.
type candidate struct {
	KeyRef
	sh *shard
	ns namespace
}

// pageHeap keeps the n smallest candidates: a max-heap by ref, so that
// the page costs memory for its own size whatever the keyspace's.
type pageHeap []candidate

func (h pageHeap) Len() int           { return len(h) }
func (h pageHeap) Less(i, j int) bool { return compareRefs(h[i].KeyRef, h[j].KeyRef) > 0 }
func (h pageHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pageHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *pageHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// offer adds c if it is among the n smallest seen.
func (h *pageHeap) offer(c candidate, n int) {
	if h.Len() < n {
		heap.Push(h, c)
	} else if compareRefs(c.KeyRef, (*h)[0].KeyRef) < 0 {
		(*h)[0] = c
		heap.Fix(h, 0)
	}
}

// InspectKeys returns a page of keys in (key, kind) order and the cursor
// of the next page (zero when this one is the last). A key that changed
// between the passes is described as it is then, or left out if gone.
func (e *Engine) InspectKeys(at timerwheel.Instant, q KeyQuery) ([]KeyState, KeyRef) {
	limit := q.Limit
	if limit <= 0 || limit > MaxKeyPage {
		limit = MaxKeyPage
	}
	// Pass 1: the limit+1 smallest matching entries (one more than the
	// page tells whether a next page exists).
	h := make(pageHeap, 0, limit+1)
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		sh.eachEntryLocked(q.Prefix, func(key string, k KeyKind, ns namespace) {
			ref := KeyRef{key, k}
			if q.Kinds.Has(k) && (q.After == KeyRef{} || compareRefs(ref, q.After) > 0) {
				h.offer(candidate{ref, sh, ns}, limit+1)
			}
		})
		sh.mu.Unlock()
	}
	slices.SortFunc(h, func(a, b candidate) int { return compareRefs(a.KeyRef, b.KeyRef) })
	var next KeyRef
	if len(h) > limit {
		h = h[:limit]
		next = h[limit-1].KeyRef
	}
	// Pass 2: describe them.
	out := make([]KeyState, 0, len(h))
	for _, c := range h {
		c.sh.mu.Lock()
		if ks, ok := c.sh.describeLocked(c.KeyRef, c.ns, at); ok {
			out = append(out, ks)
		}
		c.sh.mu.Unlock()
	}
	return out, next
}

// InspectKey returns every entry named key (a lock and a semaphore may
// share a name), in kind order.
func (e *Engine) InspectKey(at timerwheel.Instant, key string) []KeyState {
	sh := e.shardFor([]byte(key))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	var out []KeyState
	sh.eachNamedLocked(key, func(k KeyKind, ns namespace) {
		if ks, ok := sh.describeLocked(KeyRef{key, k}, ns, at); ok {
			out = append(out, ks)
		}
	})
	slices.SortFunc(out, func(a, b KeyState) int { return cmp.Compare(a.Kind, b.Kind) })
	return out
}

// eachEntryLocked calls f for every live entry of the shard whose key
// starts with prefix.
func (s *shard) eachEntryLocked(prefix string, f func(key string, k KeyKind, ns namespace)) {
	for ns := range s.res {
		for r := range s.res[ns].all {
			if strings.HasPrefix(r.key(), prefix) {
				f(r.key(), s.eng.kindOf(namespace(ns), r), namespace(ns))
			}
		}
	}
	keysWith(s.counters, prefix, KeyCounter, f)
	keysWith(s.kv, prefix, KeyKV, f)
	keysWith(s.lists, prefix, KeyList, f)
	keysWith(s.barriers, prefix, KeyBarrier, f)
}

// keysWith calls f for the keys of m, entries of kind k, that start with
// prefix.
func keysWith[V any](m map[string]V, prefix string, k KeyKind, f func(string, KeyKind, namespace)) {
	for key := range m {
		if strings.HasPrefix(key, prefix) {
			f(key, k, 0)
		}
	}
}

// eachNamedLocked calls f for every kind of entry named key.
func (s *shard) eachNamedLocked(key string, f func(k KeyKind, ns namespace)) {
	for ns := range s.res {
		if r := s.res[ns].getString(key); r != nil {
			f(s.eng.kindOf(namespace(ns), r), namespace(ns))
		}
	}
	if s.counters[key] != nil {
		f(KeyCounter, 0)
	}
	if s.kv[key] != nil {
		f(KeyKV, 0)
	}
	if s.lists[key] != nil {
		f(KeyList, 0)
	}
	if s.barriers[key] != nil {
		f(KeyBarrier, 0)
	}
}

// describeLocked builds the state of one entry; ok is false if it is gone
// (or expired, for a KV entry).
func (s *shard) describeLocked(ref KeyRef, ns namespace, at timerwheel.Instant) (KeyState, bool) {
	now := at.Tick()
	ks := KeyState{Key: ref.Key, Kind: ref.Kind, TTLMs: -1}
	switch ref.Kind {
	case KeyLock, KeySemaphore, KeyRWLock:
		r := s.res[ns].getString(ref.Key)
		if r == nil || s.eng.kindOf(ns, r) != ref.Kind {
			return ks, false
		}
		s.describeResourceLocked(&ks, r, now)
	case KeyCounter:
		c := s.counters[ref.Key]
		if c == nil {
			return ks, false
		}
		ks.Value, ks.IdleMs = c.value, int64(now-c.lastActive)
	case KeyKV:
		kv := s.kv[ref.Key]
		if kv == nil || kv.expired(at) {
			return ks, false
		}
		ks.ValueLen, ks.IdleMs = len(kv.value), int64(now-kv.lastActive)
		if kv.hasTTL {
			ks.TTLMs = max(0, int64(kv.timer.Deadline()-now))
		}
	case KeyList:
		l := s.lists[ref.Key]
		if l == nil {
			return ks, false
		}
		ks.Len, ks.IdleMs, ks.WaitersTotal = l.len(), int64(now-l.lastActive), l.waiters.n
		for w := l.waiters.head; w != nil && len(ks.Waiters) < MaxListed; w = w.ln.next {
			ks.Waiters = append(ks.Waiters, s.parkedLocked(w.sess, &w.timer, now))
		}
	case KeyBarrier:
		b := s.barriers[ref.Key]
		if b == nil {
			return ks, false
		}
		ks.Count, ks.IdleMs, ks.WaitersTotal = b.count, int64(now-b.lastActive), b.parts.n
		for w := b.parts.head; w != nil && len(ks.Waiters) < MaxListed; w = w.ln.next {
			ks.Waiters = append(ks.Waiters, s.parkedLocked(w.sess, &w.timer, now))
		}
	}
	return ks, true
}

func (s *shard) describeResourceLocked(ks *KeyState, r *resource, now timerwheel.Tick) {
	ks.Limit = int(r.limit)
	if r.isRW() {
		ks.Limit = 0
	}
	ks.IdleMs = int64(now - r.lastActive)
	ks.HoldersTotal, ks.WaitersTotal = r.nHolders(), s.queueOf(r).n
	if el := s.elections[r.key()]; el != nil {
		for _, w := range el.watchers {
			if w.observer {
				ks.Observers++
			}
		}
	}
	for sl := r.holders; sl != nil && len(ks.Holders) < MaxListed; sl = sl.next {
		h := HolderState{
			Claimant: s.eng.claimantOf(sl.sess), Fence: sl.fence, Writer: sl.writer(), Elect: sl.elect(),
			Pending: sl.twoPhase(), LeaseMs: s.leaseOf(sl), LeaseRemainingMs: max(0, int64(sl.timer.Deadline()-now)),
			HeldMs: -1, WaitedMs: -1, Renewals: -1,
		}
		if t, ok := s.timesLocked(sl); ok {
			h.HeldMs, h.WaitedMs, h.Renewals = int64(now-t.granted), int64(t.granted-t.since), int64(t.renewals)
		}
		ks.Holders = append(ks.Holders, h)
	}
	for sl := s.queueOf(r).head; sl != nil && len(ks.Waiters) < MaxListed; sl = sl.next {
		w := WaiterState{Claimant: s.eng.claimantOf(sl.sess), Writer: sl.writer(), Blocked: sl.blocked(), WaitedMs: -1, TimeoutRemainingMs: -1}
		if sl.timer.Armed() {
			w.TimeoutRemainingMs = max(0, int64(sl.timer.Deadline()-now))
		}
		if t, ok := s.timesLocked(sl); ok {
			w.WaitedMs = int64(now - t.since)
		}
		ks.Waiters = append(ks.Waiters, w)
	}
}

// parkedLocked describes a session parked on a list or barrier; their
// waits are not timed by the observatory.
func (s *shard) parkedLocked(sess *session, timer *timerwheel.Node, now timerwheel.Tick) WaiterState {
	w := WaiterState{Claimant: s.eng.claimantOf(sess), Blocked: true, WaitedMs: -1, TimeoutRemainingMs: -1}
	if timer.Armed() {
		w.TimeoutRemainingMs = max(0, int64(timer.Deadline()-now))
	}
	return w
}

// claimantOf names sess; its table entry tells whether it is still open.
func (e *Engine) claimantOf(sess *session) Claimant {
	return Claimant{Session: sess.id, ConnID: sess.connID.Load(), Open: e.sessions.get(sess.id) == sess}
}

// SessionOpened reports whether session id is open and, if known, when it
// opened (its KindOpen command's At; unknown for a session restored from
// a snapshot).
func (e *Engine) SessionOpened(id SessionID) (at timerwheel.Tick, open, known bool) {
	s := e.sessions.get(id)
	if s == nil {
		return 0, false, false
	}
	opened := timerwheel.Tick(s.opened.Load())
	return opened - 1, true, opened != 0
}

// Rebind makes the open session id connection connID's, connected at at:
// a stable-ref takeover, in which a new connection carries on an orphaned
// session, so that the observatory names the connection that now holds
// its claims (and when it connected), not the one that left. It runs in
// the replicated state's apply, so every replica rebinds alike.
func (e *Engine) Rebind(id SessionID, connID uint64, at timerwheel.Tick) {
	if s := e.sessions.get(id); s != nil {
		e.attach(s, connID)
		s.opened.Store(int64(at) + 1)
	}
}

// SessionConn returns the owner connection number of the open session id,
// and whether it is open.
func (e *Engine) SessionConn(id SessionID) (uint64, bool) {
	s := e.sessions.get(id)
	if s == nil {
		return 0, false
	}
	return s.connID.Load(), true
}
