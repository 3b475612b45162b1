package engine

// Session is the engine's view of one client connection: what it holds,
// waits for or has enqueued, so that a disconnect can clean up.
//
// A Session's methods and every engine call carrying it must come from one
// goroutine at a time (the connection's event loop); the engine reaches a
// session from elsewhere only through the Notifier.
type Session struct {
	// ID is the connection id shown as owner_conn_id in stats.
	ID uint64
	// Owner is the transport's handle for the connection (the loop's
	// conn); the engine only carries it.
	Owner any

	eng *Engine
	// claims records every slot this session created. Entries go stale
	// when a slot is freed by anyone (release by token from another
	// connection, lease expiry); the gen stamp recognises them, and
	// compaction drops them in bulk so the slice stays proportional to
	// what the session really holds.
	claims []claim
	// enq is the two-phase state per (namespace, key), consumed by w.
	enq [numNamespaces]map[string]claim
	// pop is the session's last blocking pop; its done flag (under its
	// shard lock) says whether it still waits.
	pop *popWaiter
	// bar is the session's last bwait, likewise.
	bar *barrierWaiter
	// elections: the names this session watches as observer or leader.
	elections sessionElections
}

type claim struct {
	sl  *slot
	gen uint32
}

// live reports whether the claim still names the slot it was made for.
// Reading gen without the shard lock is a hint only; callers that act on
// the slot re-check under the lock.
func (c claim) live() bool { return c.sl.gen.Load() == c.gen }

// minCompact is the claims length below which compaction is not worth it.
const minCompact = 16

// NewSession registers a connection.
func (e *Engine) NewSession(owner any) *Session {
	return &Session{ID: e.sessions.Add(1), Owner: owner, eng: e}
}

// record notes a slot created for this session. Called under sl's shard
// lock by the session's goroutine.
func (s *Session) record(sl *slot) {
	if len(s.claims) == cap(s.claims) && len(s.claims) >= minCompact {
		live := s.claims[:0]
		for _, c := range s.claims {
			if c.live() {
				live = append(live, c)
			}
		}
		clear(s.claims[len(live):])
		s.claims = live
	}
	s.claims = append(s.claims, claim{sl: sl, gen: sl.gen.Load()})
}

// enqueued returns the slot of this session's pending two-phase enqueue on
// key, or nil. Called under the key's shard lock.
func (s *Session) enqueued(ns namespace, key []byte) *slot {
	c, ok := s.enq[ns][string(key)]
	if !ok {
		return nil
	}
	if c.sl.gen.Load() != c.gen || c.sl.sess != s || c.sl.state == slotFree {
		// Released or recycled since: the state was cleared (spec §I.34).
		delete(s.enq[ns], string(key))
		return nil
	}
	return c.sl
}

func (s *Session) rememberEnqueued(ns namespace, key string, sl *slot) {
	if s.enq[ns] == nil {
		s.enq[ns] = make(map[string]claim)
	}
	s.enq[ns][key] = claim{sl: sl, gen: sl.gen.Load()}
}

func (s *Session) forgetEnqueued(ns namespace, key []byte) {
	delete(s.enq[ns], string(key))
}

// Close runs disconnect cleanup (spec §D.4): waiters and enqueue state are
// always cancelled; held slots are released unless the engine keeps them
// until their leases end. Waiters go first, as in dflockd, so releasing
// one of this session's holds cannot hand the key to its own queued
// waiter. Each slot is handled under its own shard lock, one shard at a
// time.
func (e *Engine) Close(s *Session) {
	// Subscriptions first: nothing is pushed to a closing connection,
	// not even the release events of its own holds.
	e.subs.RemoveAll(s)
	e.watches.RemoveAll(s)
	e.leaveElections(s)
	for _, holds := range [2]bool{false, true} {
		for _, c := range s.claims {
			sl := c.sl
			sh := sl.sh
			sh.lock()
			if sl.gen.Load() == c.gen && sl.sess == s && (sl.state == slotHolding) == holds {
				e.dropClaimLocked(sh, sl, s)
			}
			sh.unlock()
		}
	}
	if w := s.pop; w != nil {
		w.sh.lock()
		if !w.done {
			w.sh.endPopLocked(w)
			w.sh.dropEmptyListLocked(w.l)
		}
		w.sh.unlock()
		s.pop = nil
	}
	if w := s.bar; w != nil {
		w.sh.lock()
		if !w.done {
			w.sh.leaveBarrierLocked(w)
		}
		w.sh.unlock()
		s.bar = nil
	}
	s.claims = nil
	s.enq = [numNamespaces]map[string]claim{}
}

// dropClaimLocked ends one of a closing session's claims.
func (e *Engine) dropClaimLocked(sh *shard, sl *slot, s *Session) {
	now := e.clock.Now()
	switch sl.state {
	case slotWaiting:
		sh.dropWaiterLocked(sl, now)
	case slotHolding:
		if e.cfg.KeepOnDisconnect {
			// Nobody can observe a lapse any more: let the lease end
			// free the slot.
			sl.twoPhase = false
		} else {
			sh.releaseHolderLocked(sl, now)
		}
	case slotLapsed:
		sh.freeSlotLocked(sl)
	}
}
