package engine

import (
	"maps"
	"slices"
	"sync"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Leader election (spec §B.12). An elect is a limit-1 acquire of the lock
// of the same name, so elect and l contend for one FIFO queue and r, n
// and resign all end an elected lease. What elections add is a set of
// leader watchers per name, kept in the name's shard next to the lock:
// observers (observe) and elected holders (registered when their elect
// is granted). They receive "leader <event> <name>" pushes:
//
//   - elected: an elect was granted (to every watcher but the winner);
//   - resigned: the leader resigned (to every remaining watcher);
//   - failover: a queued waiter (elect or l) was granted a limit-1 lock
//     with watchers, so an observer sees resigned → failover → elected.
//
// A lease expiry or disconnect of a leader nobody waits behind is silent.

const (
	evElect  = "elect"
	evResign = "resign"
)

// election is the watcher set of one election name.
type election struct {
	watchers []leaderWatcher
}

// leaderWatcher is one session's registration on a name: one entry per
// session, whichever way it joined (unobserve removes it entirely).
type leaderWatcher struct {
	sess     *session
	observer bool // joined by observe
	holder   bool // joined by winning an elect; resign drops it
}

func (el *election) find(s *session) *leaderWatcher {
	for i := range el.watchers {
		if el.watchers[i].sess == s {
			return &el.watchers[i]
		}
	}
	return nil
}

// sessionElections is a session's record of the names it watches, for
// Close and the subscription cap. Grants register sessions from other
// goroutines (a hand-off runs on the releaser's loop), hence the mutex;
// lock order: shard.mu → sessionElections.mu.
type sessionElections struct {
	mu     sync.Mutex
	closed bool
	names  map[string]struct{}
}

// add records name; false once the session is closing, when nothing may
// register it any more.
func (se *sessionElections) add(name string) bool {
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.closed {
		return false
	}
	if se.names == nil {
		se.names = make(map[string]struct{})
	}
	se.names[name] = struct{}{}
	return true
}

func (se *sessionElections) remove(name string) {
	se.mu.Lock()
	delete(se.names, name)
	se.mu.Unlock()
}

func (se *sessionElections) count() int {
	se.mu.Lock()
	defer se.mu.Unlock()
	return len(se.names)
}

// close refuses further registrations and returns the names to leave,
// sorted, so that a close acts in the same order on every replica.
func (se *sessionElections) close() []string {
	se.mu.Lock()
	defer se.mu.Unlock()
	se.closed = true
	names := slices.Sorted(maps.Keys(se.names))
	se.names = nil
	return names
}

// resign releases the leader's lease (any session with the token may),
// drops the leader's holder registration (not the resigner's: they differ
// when another session resigns with the leader's token, and then, as in
// dflockd's redis-feats line, the former leader is told nothing, while an
// observing resigner is told like any observer), tells the remaining
// watchers and only then hands the lock on, so that they see resigned
// before the next leader's failover and elected.
func (e *Engine) resign(key, tok []byte, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	sl, _ := sh.holderLocked(nsLock, key, tok, now)
	if sl == nil {
		return status(vocab.StatusError)
	}
	leader := sl.sess
	sh.noteLocked(EventRelease, sl, now)
	r := sh.dropHolderLocked(sl, evResign, now)
	if w := sh.findLeaderWatcherLocked(r.key(), leader); w != nil && w.holder {
		w.holder = false
		if !w.observer {
			sh.unwatchLeaderLocked(r.key(), leader)
		}
	}
	sh.leaderPushLocked(r.key(), "resigned", nil)
	sh.handOffLocked(r, now)
	return status(vocab.StatusOK)
}

// observe registers s as an observer of name and, when the name has a
// leader, pushes "leader elected" to it at once. Re-observing keeps one
// registration; the rf profile repeats the push each time (spec §I.2 O4:
// clients use it to ask "is there a leader?"), v2 pushes only on joining.
func (e *Engine) observe(s *session, key []byte, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	defer sh.unlock()
	name := string(key)
	w := sh.findLeaderWatcherLocked(name, s)
	switch {
	case w == nil:
		if e.subscriptions(s.id) >= e.regCap() {
			return status(vocab.StatusError) // rf counts observe with listen and watch (§B.9)
		}
		if w = sh.addLeaderWatcherLocked(name, s); w == nil {
			return status(vocab.StatusOK) // closing: nothing will reach it anyway
		}
	case w.observer && !e.rf():
		return status(vocab.StatusOK)
	}
	w.observer = true
	if sh.hasLeaderLocked(key, now) {
		sh.deliverLocked(s, leaderPush("elected", name))
	}
	return status(vocab.StatusOK)
}

// unobserve removes s's registration on name, holder or observer.
func (e *Engine) unobserve(s *session, key []byte, fx *Effects) Result {
	sh := e.shardFor(key)
	sh.lock(fx)
	sh.unwatchLeaderLocked(string(key), s)
	sh.unlock()
	return status(vocab.StatusOK)
}

// hasLeaderLocked reports whether the lock of name has a live holder.
func (sh *shard) hasLeaderLocked(key []byte, now timerwheel.Instant) bool {
	r := sh.lookupLocked(nsLock, key)
	if r == nil {
		return false
	}
	for sl := r.holders; sl != nil; sl = sl.next {
		if !now.Passed(sl.timer.Deadline()) {
			return true
		}
	}
	return false
}

// electedLocked runs when an elect is granted: the winner becomes a
// holder watcher and every other watcher learns of it.
func (sh *shard) electedLocked(sl *slot) {
	key, s := sl.res.key(), sl.sess
	sh.watchEventLocked(evElect, key)
	w := sh.findLeaderWatcherLocked(key, s)
	if w == nil {
		w = sh.addLeaderWatcherLocked(key, s)
	}
	if w != nil {
		w.holder = true
	}
	sh.leaderPushLocked(key, "elected", s)
}

// failoverLocked announces that a queued waiter is about to be granted r.
// Only a limit-1 lock can have a leader; readers and semaphore slots are
// not leadership changes.
func (sh *shard) failoverLocked(r *resource) {
	if r.namespace() == nsLock && !r.isRW() && r.limit == 1 {
		sh.leaderPushLocked(r.key(), "failover", nil)
	}
}

// leaderPushLocked pushes "leader <event> <key>" to the watchers of key
// except one session (nil: all).
func (sh *shard) leaderPushLocked(key, event string, except *session) {
	el := sh.elections[key]
	if el == nil {
		return
	}
	push := leaderPush(event, key)
	for i := range el.watchers {
		if s := el.watchers[i].sess; s != except {
			sh.deliverLocked(s, push)
		}
	}
}

func leaderPush(event, key string) Result { return pushResult(vocab.PushLeader, event, key) }

// findLeaderWatcherLocked returns s's registration on key, or nil.
func (sh *shard) findLeaderWatcherLocked(key string, s *session) *leaderWatcher {
	if el := sh.elections[key]; el != nil {
		return el.find(s)
	}
	return nil
}

// addLeaderWatcherLocked registers s on key (it must not be yet); nil when
// the session is closing and may not register any more.
func (sh *shard) addLeaderWatcherLocked(key string, s *session) *leaderWatcher {
	if !s.elections.add(key) {
		return nil
	}
	el := sh.elections[key]
	if el == nil {
		el = &election{}
		sh.elections[key] = el
	}
	el.watchers = append(el.watchers, leaderWatcher{sess: s})
	return &el.watchers[len(el.watchers)-1]
}

// unwatchLeaderLocked removes s's registration on key, if any.
func (sh *shard) unwatchLeaderLocked(key string, s *session) {
	el := sh.elections[key]
	if el == nil {
		return
	}
	for i := range el.watchers {
		if el.watchers[i].sess != s {
			continue
		}
		last := len(el.watchers) - 1
		copy(el.watchers[i:], el.watchers[i+1:])
		el.watchers[last] = leaderWatcher{}
		el.watchers = el.watchers[:last]
		s.elections.remove(key)
		break
	}
	if len(el.watchers) == 0 {
		delete(sh.elections, key)
	}
}

// leaveElections removes every registration of a closing session.
func (e *Engine) leaveElections(s *session, fx *Effects) {
	for _, name := range s.elections.close() {
		sh := e.shardFor([]byte(name))
		sh.lock(fx)
		sh.unwatchLeaderLocked(name, s)
		sh.unlock()
	}
}

// regCap is the cap on a session's listen + watch + observe registrations
// together: rf's --max-subscriptions (spec §B.9), and always
// MaxRegistrations.
func (e *Engine) regCap() int {
	if max := e.cfg.MaxSubscriptions; max > 0 && e.rf() {
		return min(max, e.cfg.MaxRegistrations)
	}
	return e.cfg.MaxRegistrations
}

// subscriptions counts a session's registrations for --max-subscriptions:
// rf counts listen, watch and observe together (spec §B.9).
func (e *Engine) subscriptions(id SessionID) int {
	n := e.subs.Count(id) + e.watches.Count(id)
	if s := e.sessions.get(id); s != nil {
		n += s.elections.count()
	}
	return n
}
