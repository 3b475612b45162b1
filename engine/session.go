package engine

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// session is the engine's view of one client session: what it holds,
// waits for or has enqueued, so that its close can clean up.
//
// Commands of one session are applied one at a time (by the session's
// transport goroutine); other goroutines reach a session's state only
// through the leader registrations of elections (their own mutex) and the
// claims' generation stamps (atomics).
type session struct {
	id SessionID
	// connID is the number stats show as owner_conn_id. Atomic, as is
	// opened: a stable-ref takeover (Rebind) changes both while the
	// observatory may read them.
	connID atomic.Uint64
	// opened is when the session opened, plus one (the observatory shows
	// it); 0 for one restored from a snapshot, whose opening is unknown.
	opened atomic.Int64
	// claims records every slot this session created. Entries go stale
	// when a slot is freed by anyone (release by token from another
	// session, lease expiry); the gen stamp recognises them, and
	// compaction drops them in bulk so the log stays proportional to
	// what the session really holds (claimlog.go).
	claims claimLog
	// enq is the two-phase state per (namespace, key), consumed by w.
	// Entries whose slot was freed by someone else (a release by token,
	// the GC forgetting a lapsed grant) go stale; rememberEnqueued sweeps
	// them once the map has doubled since the last sweep.
	enq      [numNamespaces]map[string]claim
	enqSweep [numNamespaces]int // len(enq[ns]) that triggers the next sweep
	// pop is the session's last blocking pop; its done flag (under its
	// shard lock) says whether it still waits.
	pop *popWaiter
	// bar is the session's last bwait, likewise.
	bar *barrierWaiter
	// elections: the names this session watches as observer or leader.
	elections sessionElections
	// waits: the session's last request waited; stillWaits (queue.go)
	// finds out whether it still does, and clears it once not.
	waits bool
	// queue holds, encoded and in order, the requests the session sent
	// behind its request that waits (queue.go); empty on a single node.
	queue []byte
	// tenant is what the session's claims and keys count against
	// (tenant.go); nil: no quota.
	tenant *Tenant
	// attached: a cluster's connection connID has this session
	// (conns.go).
	attached bool
}

// claim is a session's record of a slot it created. shard is the slot's
// shard, for ever (free slots stay on their shard's list): it sits in
// what would be the claim's padding, and lets a close find the slot's
// lock without reading the slot.
type claim struct {
	sl    *slot
	gen   uint32
	shard uint16
}

// live reports whether the claim still names the slot it was made for.
// Reading gen without the shard lock is a hint only; callers that act on
// the slot re-check under the lock.
func (c claim) live() bool { return c.sl.gen.Load() == c.gen }

// minCompact is the claims length below which compaction is not worth it.
const minCompact = 16

// record notes a slot created for this session on shard sh. Called
// under sl's shard lock by the session's goroutine.
func (s *session) record(sl *slot, sh int) {
	if l := &s.claims; l.len() >= max(l.compactAt, minCompact) {
		l.compact(claim.live)
	}
	s.claims.push(claim{sl: sl, gen: sl.gen.Load(), shard: uint16(sh)})
}

// enqueued returns the slot of this session's pending two-phase enqueue on
// key, or nil. Called under the key's shard lock.
func (s *session) enqueued(ns namespace, key []byte) *slot {
	c, ok := s.enq[ns][string(key)]
	if !ok {
		return nil
	}
	if c.sl.gen.Load() != c.gen || c.sl.sess != s || c.sl.state() == slotFree {
		// Released or recycled since: the state was cleared (spec §I.34).
		delete(s.enq[ns], string(key))
		return nil
	}
	return c.sl
}

func (s *session) rememberEnqueued(ns namespace, key string, sl *slot, sh int) {
	m := s.enq[ns]
	if m == nil {
		m = make(map[string]claim)
		s.enq[ns] = m
	}
	if len(m) >= max(s.enqSweep[ns], minCompact) {
		m = s.sweepEnqueued(ns)
	}
	m[key] = claim{sl: sl, gen: sl.gen.Load(), shard: uint16(sh)}
}

// sweepEnqueued drops the stale entries of enq[ns]. A Go map never
// returns the room of deleted entries, so when most are stale the live
// ones move to a new map. A stale claim never comes back to life (gen
// only grows), so reading gen without the slot's shard lock is safe here.
func (s *session) sweepEnqueued(ns namespace) map[string]claim {
	m := s.enq[ns]
	live := 0
	for _, c := range m {
		if c.live() {
			live++
		}
	}
	if live < len(m)/2 {
		fresh := make(map[string]claim, live)
		for k, c := range m {
			if c.live() {
				fresh[k] = c
			}
		}
		m = fresh
		s.enq[ns] = m
	} else {
		for k, c := range m {
			if !c.live() {
				delete(m, k)
			}
		}
	}
	s.enqSweep[ns] = 2 * len(m)
	return m
}

func (s *session) forgetEnqueued(ns namespace, key []byte) {
	delete(s.enq[ns], string(key))
}

// sessionTable maps SessionIDs to sessions. An id's low 32 bits are a
// dense index (reused after a close), its high 32 bits that index's
// generation, so a stale id never finds a later session. Lookups are
// lock-free: an atomic pointer to a directory of fixed chunks, which only
// ever grows; Open and Close take mu.
type sessionTable struct {
	dir atomic.Pointer[[]*sessionChunk]
	mu  struct {
		sync.Mutex
		gens  []uint32 // generation per index
		free  []uint32 // indexes of closed sessions, reused LIFO
		conns uint64   // connection numbers handed out
	}
}

const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

type sessionChunk [chunkSize]atomic.Pointer[session]

// open registers a new session and returns it.
func (t *sessionTable) open(connID uint64, at timerwheel.Tick) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	var idx uint32
	if n := len(t.mu.free); n > 0 {
		idx = t.mu.free[n-1]
		t.mu.free = t.mu.free[:n-1]
	} else {
		idx = uint32(len(t.mu.gens))
		t.mu.gens = append(t.mu.gens, 0)
		if int(idx)%chunkSize == 0 {
			t.growLocked()
		}
	}
	t.mu.gens[idx]++
	t.mu.conns++
	if connID == 0 {
		connID = t.mu.conns
	}
	s := &session{id: SessionID(uint64(t.mu.gens[idx])<<32 | uint64(idx))}
	s.connID.Store(connID)
	s.opened.Store(int64(at) + 1)
	t.chunk(idx)[idx%chunkSize].Store(s)
	return s
}

// growLocked adds one chunk to the directory (copy on write).
func (t *sessionTable) growLocked() {
	var dir []*sessionChunk
	if d := t.dir.Load(); d != nil {
		dir = append(dir, *d...)
	}
	dir = append(dir, new(sessionChunk))
	t.dir.Store(&dir)
}

func (t *sessionTable) chunk(idx uint32) *sessionChunk { return (*t.dir.Load())[idx>>chunkBits] }

// get returns the live session id names, or nil.
func (t *sessionTable) get(id SessionID) *session {
	idx := uint32(id)
	d := t.dir.Load()
	if d == nil || int(idx>>chunkBits) >= len(*d) {
		return nil
	}
	s := (*d)[idx>>chunkBits][idx%chunkSize].Load()
	if s == nil || s.id != id {
		return nil
	}
	return s
}

// close forgets s; its index may be reused by a later open.
func (t *sessionTable) close(s *session) {
	idx := uint32(s.id)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.chunk(idx)[idx%chunkSize].Store(nil)
	t.mu.free = append(t.mu.free, idx)
}

// count returns the number of open sessions.
func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.gens) - len(t.mu.free)
}

// mustSession returns the session a command names. A command for a session
// that is not open is the caller's mistake.
func (e *Engine) mustSession(id SessionID) *session {
	s := e.sessions.get(id)
	if s == nil {
		panic(fmt.Sprintf("engine: command for session %#x, which is not open", uint64(id)))
	}
	return s
}

// closeSession runs disconnect cleanup (spec §D.4): waiters and enqueue
// state are always cancelled; held slots are released unless the engine
// keeps them until their leases end. Waiters go first, as in dflockd, so
// releasing one of this session's holds cannot hand the key to its own
// queued waiter. Each slot is handled under its own shard lock, one shard
// at a time, in the order the session made its claims.
func (e *Engine) closeSession(s *session, now timerwheel.Instant, keep bool, fx *Effects) {
	// Subscriptions first: nothing is pushed to a closing session, not
	// even the release events of its own holds.
	e.subs.RemoveAll(s.id)
	e.watches.RemoveAll(s.id)
	e.leaveElections(s, fx)
	for _, holds := range [2]bool{false, true} {
		for i := range s.claims.nchunks() {
			claims := s.claims.chunk(i)
			for _, c := range claims {
				sl := c.sl
				sh := &e.shards[c.shard]
				sh.lock(fx)
				if sl.gen.Load() == c.gen && sl.sess == s && (sl.state() == slotHolding) == holds {
					e.dropClaimLocked(sh, sl, now, keep)
				}
				sh.unlock()
			}
		}
	}
	if w := s.pop; w != nil {
		w.sh.lock(fx)
		if !w.done {
			w.sh.endPopLocked(w)
			w.sh.dropEmptyListLocked(w.l)
		}
		w.sh.unlock()
		s.pop = nil
	}
	if w := s.bar; w != nil {
		w.sh.lock(fx)
		if !w.done {
			w.sh.leaveBarrierLocked(w)
		}
		w.sh.unlock()
		s.bar = nil
	}
	s.claims = claimLog{}
	s.enq = [numNamespaces]map[string]claim{}
	// What it sent behind its wait never runs. Only a queue that exists
	// is dropped: on a single node, where loops apply side by side and no
	// session ever queues, a release on another loop may be reading this
	// session's (empty) queue as it grants the wait being closed here
	// (resumeQueues), and must not meet a write.
	if s.queue != nil {
		s.queue = nil
	}
	e.detachConn(s)
	e.sessions.close(s)
}

// cancel (KindCancel) withdraws s's parked request: the blocked waiter
// with the given tag (0 for the untagged one), or, with tag 0, its
// blocking pop or barrier wait.
func (e *Engine) cancel(s *session, tag uint32, now timerwheel.Instant, fx *Effects) Result {
	if e.findWait(s, tag, true, now, fx) {
		return Result{Status: vocab.StatusOK, Kind: KindInt, Int: 1}
	}
	return Result{Status: vocab.StatusOK, Kind: KindInt}
}

// findWait reports whether s waits with the given tag: a blocked waiter,
// or, with tag 0, a blocking pop or a barrier wait. With withdraw it also
// withdraws that wait (cancel), under the lock it found it under.
func (e *Engine) findWait(s *session, tag uint32, withdraw bool, now timerwheel.Instant, fx *Effects) bool {
	for i := range s.claims.nchunks() {
		claims := s.claims.chunk(i)
		for _, c := range claims {
			if !c.live() {
				continue
			}
			sl := c.sl
			sh := &e.shards[c.shard]
			sh.lock(fx)
			found := sl.gen.Load() == c.gen && sl.sess == s && sl.state() == slotWaiting && sl.blocked() && sh.tagOf(sl) == tag
			if found && withdraw {
				sh.noteLocked(EventCancel, sl, now)
				sh.dropWaiterLocked(sl, now)
			}
			sh.unlock()
			if found {
				return true
			}
		}
	}
	if tag != 0 {
		return false
	}
	if w := s.pop; w != nil {
		w.sh.lock(fx)
		found := !w.done
		if found && withdraw {
			w.sh.endPopLocked(w)
			w.sh.dropEmptyListLocked(w.l)
		}
		w.sh.unlock()
		if found {
			return true
		}
	}
	if w := s.bar; w != nil {
		w.sh.lock(fx)
		found := !w.done
		if found && withdraw {
			w.sh.leaveBarrierLocked(w)
		}
		w.sh.unlock()
		if found {
			return true
		}
	}
	return false
}

// dropClaimLocked ends one of a closing session's claims.
func (e *Engine) dropClaimLocked(sh *shard, sl *slot, now timerwheel.Instant, keep bool) {
	switch sl.state() {
	case slotWaiting:
		sh.noteLocked(EventDisconnect, sl, now)
		sh.dropWaiterLocked(sl, now)
	case slotHolding:
		if keep {
			// Nobody can observe a lapse any more: let the lease end
			// free the slot.
			sl.set(flagTwoPhase, false)
		} else {
			sh.noteLocked(EventDisconnect, sl, now)
			sh.releaseHolderLocked(sl, now)
		}
	case slotLapsed:
		sh.freeSlotLocked(sl)
	}
}
