package engine

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// The observatory's record of lock events (Config.Events): a bounded ring
// per shard, written under the shard lock the command already holds, and
// the times of each live slot (queued, granted, renewals) that the lock
// structures have no room for (a slot fills its 96-byte size class).
// With Config.Events 0 a shard has no obs, and every hook is a nil check.
//
// The ring is per shard so that recording never takes a lock of its own:
// one shared ring would serialise every shard's grants and releases. The
// events of one key are all in its shard's ring, in order; across shards
// only a merge by time can order them (the HTTP API's stream does).

// EventKind is what happened on a lock, semaphore or read-write lock key.
type EventKind uint8

const (
	EventQueue        EventKind = iota + 1 // a waiter joined the FIFO (l, sl, rl/wl, e, se, a tagged wait)
	EventGrant                             // a holder got the key (fast path or hand-off)
	EventRelease                           // a holder released it (r, sr, resign, a foreign release)
	EventRenew                             // a holder's lease restarted
	EventExpire                            // a lease ran out: Session and Fence name the holder that lost it
	EventTimeout                           // a waiter's acquire or wait timeout ended its wait
	EventDisconnect                        // a closing session's hold was released or its wait cancelled
	EventCancel                            // a parked request was withdrawn (its HTTP client left)
	EventForceRelease                      // an operator released the holder (Note: who asked)
)

var eventNames = [...]string{
	EventQueue: "queue", EventGrant: "grant", EventRelease: "release", EventRenew: "renew",
	EventExpire: "expire", EventTimeout: "timeout", EventDisconnect: "disconnect",
	EventCancel: "cancel", EventForceRelease: "force_release",
}

// String is the kind's name in the HTTP API and the event stream.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one entry of a shard's ring. Key and Note are immutable
// strings shared with the engine's state, safe to keep.
type Event struct {
	Seq     uint64 // the shard's event number, from 1, without gaps
	At      timerwheel.Tick
	Kind    EventKind
	Type    KeyKind // KeyLock, KeySemaphore or KeyRWLock
	Writer  bool    // the write side of a read-write lock
	Key     string
	Session SessionID // whose claim it was
	ConnID  uint64    // that session's owner_conn_id
	Fence   uint64    // the grant's fence; 0 for a waiter
	Note    string    // EventForceRelease: who asked
}

// slotTimes is what the observatory knows of a live slot beyond the slot.
type slotTimes struct {
	since    timerwheel.Tick // queued, or granted on the fast path
	granted  timerwheel.Tick // 0 while waiting
	renewals uint32
}

// shardObs is a shard's observatory state, guarded by the shard lock
// except next, which readers poll without it.
type shardObs struct {
	ring  []Event
	next  atomic.Uint64 // Seq of the next event; the ring holds [next-len(ring), next)
	times map[*slot]slotTimes
	// hot are the shard's hot-key sketches (hotkeys.go).
	hot hotSketches
}

// minRing is the smallest per-shard ring: a key's recent timeline needs a
// few events even when --observatory-events is split over many shards.
const minRing = 16

func newShardObs(events, shards int) *shardObs {
	return &shardObs{ring: make([]Event, max(minRing, events/shards)), times: make(map[*slot]slotTimes), hot: newHotSketches(shards)}
}

// noteLocked records event k of slot sl at now; sl must still be live.
// Kept tiny so that it inlines to a nil check when the observatory is off.
func (s *shard) noteLocked(k EventKind, sl *slot, now timerwheel.Instant) {
	if s.obs != nil {
		s.recordLocked(k, sl, now.Tick(), "")
	}
}

func (s *shard) recordLocked(k EventKind, sl *slot, at timerwheel.Tick, note string) {
	o, r := s.obs, sl.res
	seq := o.next.Load() + 1
	o.ring[(seq-1)%uint64(len(o.ring))] = Event{
		Seq: seq, At: at, Kind: k, Type: s.eng.kindOf(r.namespace(), r), Writer: sl.writer(), Key: r.key(),
		Session: sl.sess.id, ConnID: sl.sess.connID.Load(), Fence: sl.fence, Note: note,
	}
	o.next.Store(seq)
	switch k {
	case EventQueue:
		o.times[sl] = slotTimes{since: at}
	case EventGrant:
		t, ok := o.times[sl]
		if !ok {
			t.since = at // the fast path: no wait
		}
		t.granted = at
		o.times[sl] = t
	case EventRenew:
		if t, ok := o.times[sl]; ok {
			t.renewals++
			o.times[sl] = t
		}
	}
}

// forgetSlotLocked drops the times of a slot being freed.
func (s *shard) forgetSlotLocked(sl *slot) {
	if s.obs != nil {
		delete(s.obs.times, sl)
	}
}

// timesLocked returns what the observatory knows of sl (ok false: off, or
// the slot predates it, e.g. restored from a snapshot).
func (s *shard) timesLocked(sl *slot) (slotTimes, bool) {
	if s.obs == nil {
		return slotTimes{}, false
	}
	t, ok := s.obs.times[sl]
	return t, ok
}

// EventsOn reports whether the engine records events (Config.Events > 0).
func (e *Engine) EventsOn() bool { return e.cfg.Events > 0 }

// EventHead returns the Seq of shard i's latest event (0: none yet),
// without its lock: a reader polls it to skip shards with nothing new.
func (e *Engine) EventHead(i int) uint64 {
	if o := e.shards[i].obs; o != nil {
		return o.next.Load()
	}
	return 0
}

// EventsSince appends to dst shard i's events after Seq after, oldest
// first, at most limit of them, and returns dst and how many events after
// `after` the ring had already overwritten (the reader's loss).
func (e *Engine) EventsSince(i int, after uint64, limit int, dst []Event) ([]Event, uint64) {
	sh := &e.shards[i]
	if sh.obs == nil {
		return dst, 0
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	o := sh.obs
	next, size := o.next.Load(), uint64(len(o.ring))
	first := uint64(1)
	if next > size {
		first = next - size + 1
	}
	var lost uint64
	if after+1 < first {
		lost = first - after - 1
		after = first - 1
	}
	for seq := after + 1; seq <= next && limit > 0; seq++ {
		dst = append(dst, o.ring[(seq-1)%size])
		limit--
	}
	return dst, lost
}

// KeyEvents appends to dst the events of key still in its shard's ring,
// oldest first, at most limit (the newest ones).
func (e *Engine) KeyEvents(key string, limit int, dst []Event) []Event {
	sh := e.shardFor([]byte(key))
	if sh.obs == nil || limit <= 0 {
		return dst
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	o := sh.obs
	next, size := o.next.Load(), uint64(len(o.ring))
	start := len(dst)
	// Newest first, then reversed: the newest are the ones wanted.
	for seq := next; seq > 0 && next-seq < size && len(dst)-start < limit; seq-- {
		if ev := &o.ring[(seq-1)%size]; ev.Key == key {
			dst = append(dst, *ev)
		}
	}
	for i, j := start, len(dst)-1; i < j; i, j = i+1, j-1 {
		dst[i], dst[j] = dst[j], dst[i]
	}
	return dst
}
