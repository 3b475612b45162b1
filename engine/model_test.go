package engine

// Model-based test: the engine and a tiny single-threaded reference model
// of the v2 lock and semaphore semantics run the same random operations,
// and after every step their replies, deliveries and state must agree.
//
// The semantics the model encodes (spec = /work/shared/spec/dflockd-compat.md):
//
//   - Locks and semaphores live in separate namespaces (§B.2, §I.6): the
//     same key name may be both; r/n/w only see locks, sr/sn/sw only
//     semaphores. A lock is a resource of limit 1.
//   - A resource (namespace, key) has a limit fixed by its creator; a later
//     sl/se with another limit gets error_limit_mismatch (§B.2) until GC
//     forgets the key.
//   - Creating a key beyond --max-locks answers error_max_locks; existing
//     keys keep working at the cap (§B.1.7, §I.22).
//   - Strict per-key FIFO (§B.1.1): the fast path needs free capacity and
//     an empty queue. Grants go to the queue head whenever capacity frees
//     (release, lease expiry, disconnect). Not re-entrant (§B.1.2).
//   - timeout 0 is a try-lock, but with --max-waiters reached it answers
//     error_max_waiters first (§B.1.3, §B.1.8).
//   - Leases expire at now >= deadline (§B.1.4). The timer wheel fires them
//     on time; an acquire or enqueue that finds the key full, and any token
//     lookup (r, n) and e/w on the caller's own expired grant, evict an
//     expired holder first, so answers do not depend on timer latency
//     (§I.2 O1-O3). An expired lease is never renewed or released: plain
//     "error" in v2 (§B.0, §I.4).
//   - Release and renew need the exact token; any session may use it
//     (§B.1.6). Renew resets the lease to now+ttl (default ttl when none is
//     given) and echoes the ttl (§B.0).
//   - Two-phase (§B.1.5): e/se either grants at once ("acquired", the grant
//     is recorded as an unobserved two-phase grant) or queues ("queued",
//     no timer). The enqueue state belongs to (session, namespace, key); a
//     second e while it is live is error_already_enqueued. w/sw consumes
//     it whatever the outcome: a grant (made before or during the w) is
//     answered "ok T L" with the lease restarted at now+L; a queued slot
//     with w timeout 0 times out and leaves the queue; otherwise w parks.
//     A two-phase grant whose lease ran out before w lapses: it frees the
//     capacity but w answers error_lease_expired and a new e starts afresh
//     (§I.2 O1, O2, §I.21). Releasing the grant by token clears the
//     enqueue state (§I.34).
//   - Parked requests (l/sl with timeout > 0, w/sw parked) get exactly one
//     delivery: the grant, or "timeout" when their deadline passes.
//   - Disconnect (§D.4, §I.7): waiters and enqueue state are always
//     cancelled, without a delivery; held slots are released (handing
//     capacity on) unless auto-release is off, in which case they live
//     until their lease ends. The engine cleans a session's slots in the
//     order it created them, so releasing a hold can first grant the
//     session's own waiter queued behind it (delivered to the closing
//     session, which the loop drops) before that waiter is released in
//     turn; dflockd cancels waiters first. Nobody else can tell.
//   - GC (§D.6) prunes keys with no holders and no waiters whose last
//     activity (acquire, enqueue, wait, release, hand-off, timeout or
//     disconnect cleanup touching the key; not a wrong token) is at least
//     --gc-max-idle old, and with them the lapsed two-phase grants on
//     those keys (a later w answers error_not_enqueued).
//
// Timers that fall due on the same millisecond and key may fire in either
// order (the spec does not order them, nor does the wheel); when a lease
// expiry races a waiter's timeout that decides whether the waiter is
// granted. The model therefore keeps every world the engine may
// legitimately be in, and after each step keeps those that agree with it.

import (
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

var (
	modelSeeds = flag.Int("engine.modelseeds", 0, "seeds for TestModel (0: default)")
	modelSteps = flag.Int("engine.modelsteps", 0, "steps per seed for TestModel (0: default)")
	modelSeed  = flag.Uint64("engine.modelseed", 0, "run TestModel for this one seed (0: all)")
)

// ---- the reference model ----

type resKey struct {
	ns  namespace
	key string
}

func (k resKey) String() string {
	if k.ns == nsSem {
		return "sem:" + k.key
	}
	return "lock:" + k.key
}

type modelCfg struct {
	maxLocks     int // math.MaxInt when unlimited
	maxWaiters   int // math.MaxInt when unlimited
	keep         bool
	gcIdle       int64 // ms
	defaultLease int64 // ms
}

// mSlot is a waiter or holder. Freed slots are deleted from model.slots.
type mSlot struct {
	id       int
	sess     int
	rk       resKey
	state    slotState // slotWaiting, slotHolding or slotLapsed
	twoPhase bool      // made by e/se and not yet observed by w/sw
	blocked  bool      // its session is parked on it
	lease    int64     // ms
	deadline int64     // the armed timer (timeout or lease); 0 = none
	token    fence.Token
	bound    bool // token is known (seen in a reply, delivery or snapshot)
}

type mRes struct {
	limit      int
	holders    []int // slot ids in grant order
	queue      []int // FIFO
	lastActive int64
}

func (r *mRes) idle() bool { return len(r.holders) == 0 && len(r.queue) == 0 }

type mSess struct {
	closed bool
	parked int   // slot the session is parked on, 0 if none
	claims []int // slots this session created, in order (disconnect cleanup)
	enq    map[resKey]int
}

// mOut is an expected Result. For grants and renewals slot names the slot
// whose token the Result must carry.
type mOut struct {
	blocked bool
	status  vocab.Status
	kind    ResultKind
	lease   int64
	slot    int
}

func (o mOut) String() string {
	switch {
	case o.blocked:
		return "blocked"
	case o.kind == KindGrant:
		return fmt.Sprintf("%v <slot %d> %d", o.status, o.slot, o.lease)
	case o.kind == KindRenew:
		return fmt.Sprintf("renew %d <slot %d>", o.lease, o.slot)
	}
	return o.status.String()
}

type mDelivery struct {
	sess int
	out  mOut
}

type model struct {
	cfg    modelCfg
	res    map[resKey]*mRes
	slots  map[int]*mSlot
	sess   []*mSess
	nextID int
	keys   int
	// Effects of the current step.
	delivered []mDelivery
	grants    int
}

func newModel(cfg modelCfg) *model {
	return &model{cfg: cfg, res: map[resKey]*mRes{}, slots: map[int]*mSlot{}, nextID: 1}
}

func (m *model) clone() *model {
	c := *m
	c.res = make(map[resKey]*mRes, len(m.res))
	for k, r := range m.res {
		r2 := *r
		r2.holders = slices.Clone(r.holders)
		r2.queue = slices.Clone(r.queue)
		c.res[k] = &r2
	}
	c.slots = make(map[int]*mSlot, len(m.slots))
	for id, sl := range m.slots {
		s2 := *sl
		c.slots[id] = &s2
	}
	c.sess = make([]*mSess, len(m.sess))
	for i, s := range m.sess {
		s2 := *s
		s2.claims = slices.Clone(s.claims)
		s2.enq = maps.Clone(s.enq)
		c.sess[i] = &s2
	}
	c.delivered = slices.Clone(m.delivered)
	return &c
}

func (m *model) addSession() {
	m.sess = append(m.sess, &mSess{enq: map[resKey]int{}})
}

func status0(s vocab.Status) mOut { return mOut{status: s, kind: KindStatus} }

func grantOut(s vocab.Status, sl *mSlot) mOut {
	return mOut{status: s, kind: KindGrant, lease: sl.lease / 1000, slot: sl.id}
}

func removeID(ids []int, id int) []int {
	i := slices.Index(ids, id)
	if i < 0 {
		panic(fmt.Sprintf("model: slot %d not in %v", id, ids))
	}
	return slices.Delete(ids, i, i+1)
}

func (m *model) newSlot(si int, rk resKey, leaseMs int64) *mSlot {
	sl := &mSlot{id: m.nextID, sess: si, rk: rk, lease: leaseMs}
	m.nextID++
	m.slots[sl.id] = sl
	m.sess[si].claims = append(m.sess[si].claims, sl.id)
	return sl
}

// free forgets a slot; an enqueue state naming it is gone with it.
func (m *model) free(sl *mSlot) {
	delete(m.slots, sl.id)
	if s := m.sess[sl.sess]; s.enq[sl.rk] == sl.id {
		delete(s.enq, sl.rk)
	}
}

// touch records activity on a resource (the engine's touchLocked).
func (m *model) touch(r *mRes, now int64) { r.lastActive = now }

func (m *model) deliver(si int, o mOut) {
	m.delivered = append(m.delivered, mDelivery{si, o})
	m.sess[si].parked = 0
}

func (m *model) grant(sl *mSlot, now int64) {
	r := m.res[sl.rk]
	sl.state = slotHolding
	sl.deadline = now + sl.lease
	r.holders = append(r.holders, sl.id)
	m.grants++
}

// handOff grants freed capacity to the queue head(s), FIFO.
func (m *model) handOff(r *mRes, now int64) {
	for len(r.queue) > 0 && len(r.holders) < r.limit {
		sl := m.slots[r.queue[0]]
		r.queue = slices.Delete(r.queue, 0, 1)
		blocked := sl.blocked
		sl.blocked = false
		m.grant(sl, now)
		if blocked {
			m.deliver(sl.sess, grantOut(vocab.StatusOK, sl))
		}
	}
	m.touch(r, now)
}

func (m *model) releaseHolder(sl *mSlot, now int64) {
	r := m.res[sl.rk]
	r.holders = removeID(r.holders, sl.id)
	m.free(sl)
	m.handOff(r, now)
}

// expireHolder ends a lease; an unobserved two-phase grant lapses instead
// of vanishing, so that its w can report error_lease_expired.
func (m *model) expireHolder(sl *mSlot, now int64) {
	if !sl.twoPhase {
		m.releaseHolder(sl, now)
		return
	}
	r := m.res[sl.rk]
	r.holders = removeID(r.holders, sl.id)
	sl.state = slotLapsed
	sl.deadline = 0
	m.handOff(r, now)
}

func (m *model) timeoutWaiter(sl *mSlot, now int64) {
	r := m.res[sl.rk]
	r.queue = removeID(r.queue, sl.id)
	si, blocked := sl.sess, sl.blocked
	m.free(sl)
	m.touch(r, now)
	if blocked {
		m.deliver(si, status0(vocab.StatusTimeout))
	}
}

// admit finds or creates the resource of an acquire or enqueue.
func (m *model) admit(rk resKey, limit int, now int64) (*mRes, mOut, bool) {
	r := m.res[rk]
	if r == nil {
		if m.keys >= m.cfg.maxLocks {
			return nil, status0(vocab.StatusErrorMaxLocks), false
		}
		m.keys++
		r = &mRes{limit: limit, lastActive: now}
		m.res[rk] = r
		return r, mOut{}, true
	}
	if r.limit != limit {
		return nil, status0(vocab.StatusErrorLimitMismatch), false
	}
	if len(r.holders) >= r.limit {
		for _, id := range slices.Clone(r.holders) {
			if sl := m.slots[id]; sl != nil && sl.state == slotHolding && sl.deadline <= now {
				m.expireHolder(sl, now)
			}
		}
	}
	return r, mOut{}, true
}

func (m *model) acquire(si int, rk resKey, limit int, timeoutMs, leaseMs, now int64) mOut {
	r, out, ok := m.admit(rk, limit, now)
	if !ok {
		return out
	}
	if len(r.queue) == 0 && len(r.holders) < r.limit {
		sl := m.newSlot(si, rk, leaseMs)
		m.grant(sl, now)
		m.touch(r, now)
		return grantOut(vocab.StatusOK, sl)
	}
	if len(r.queue) >= m.cfg.maxWaiters {
		return status0(vocab.StatusErrorMaxWaiters)
	}
	if timeoutMs == 0 {
		return status0(vocab.StatusTimeout)
	}
	sl := m.newSlot(si, rk, leaseMs)
	sl.state = slotWaiting
	sl.blocked = true
	sl.deadline = now + timeoutMs
	r.queue = append(r.queue, sl.id)
	m.sess[si].parked = sl.id
	m.touch(r, now)
	return mOut{blocked: true}
}

// holder finds the live holder of a token, evicting it if its lease ran out.
func (m *model) holder(rk resKey, tok fence.Token, valid bool, now int64) *mSlot {
	r := m.res[rk]
	if !valid || r == nil {
		return nil
	}
	for _, id := range r.holders {
		sl := m.slots[id]
		if !sl.bound || sl.token != tok {
			continue
		}
		if sl.deadline <= now {
			m.expireHolder(sl, now)
			return nil
		}
		return sl
	}
	return nil
}

func (m *model) release(rk resKey, tok fence.Token, valid bool, now int64) mOut {
	sl := m.holder(rk, tok, valid, now)
	if sl == nil {
		return status0(vocab.StatusError)
	}
	m.releaseHolder(sl, now)
	return status0(vocab.StatusOK)
}

func (m *model) renew(rk resKey, tok fence.Token, valid bool, leaseMs, now int64) mOut {
	sl := m.holder(rk, tok, valid, now)
	if sl == nil {
		return status0(vocab.StatusError)
	}
	sl.lease = leaseMs
	sl.deadline = now + leaseMs
	return mOut{status: vocab.StatusOK, kind: KindRenew, lease: leaseMs / 1000, slot: sl.id}
}

func (m *model) enqueue(si int, rk resKey, limit int, leaseMs, now int64) mOut {
	s := m.sess[si]
	if id, ok := s.enq[rk]; ok {
		sl := m.slots[id]
		if sl.state == slotHolding && sl.deadline <= now {
			m.expireHolder(sl, now)
		}
		if sl.state != slotLapsed {
			return status0(vocab.StatusErrorAlreadyEnqueued)
		}
		m.free(sl) // a lapsed fast-path grant: start afresh (§I.2 O2)
	}
	r, out, ok := m.admit(rk, limit, now)
	if !ok {
		return out
	}
	if len(r.queue) == 0 && len(r.holders) < r.limit {
		sl := m.newSlot(si, rk, leaseMs)
		m.grant(sl, now)
		sl.twoPhase = true
		s.enq[rk] = sl.id
		m.touch(r, now)
		return grantOut(vocab.StatusAcquired, sl)
	}
	if len(r.queue) >= m.cfg.maxWaiters {
		return status0(vocab.StatusErrorMaxWaiters)
	}
	sl := m.newSlot(si, rk, leaseMs)
	sl.state = slotWaiting
	sl.twoPhase = true
	r.queue = append(r.queue, sl.id)
	s.enq[rk] = sl.id
	m.touch(r, now)
	return status0(vocab.StatusQueued)
}

func (m *model) wait(si int, rk resKey, timeoutMs, now int64) mOut {
	s := m.sess[si]
	id, ok := s.enq[rk]
	if !ok {
		return status0(vocab.StatusErrorNotEnqueued)
	}
	delete(s.enq, rk)
	sl := m.slots[id]
	switch sl.state {
	case slotLapsed:
		m.free(sl)
		return status0(vocab.StatusErrorLeaseExpired)
	case slotHolding:
		if sl.deadline <= now {
			m.expireHolder(sl, now)
			m.free(sl)
			return status0(vocab.StatusErrorLeaseExpired)
		}
		sl.twoPhase = false
		sl.deadline = now + sl.lease // observing a grant restarts its lease
		m.touch(m.res[rk], now)
		return grantOut(vocab.StatusOK, sl)
	}
	sl.twoPhase = false
	if timeoutMs == 0 {
		m.timeoutWaiter(sl, now)
		return status0(vocab.StatusTimeout)
	}
	sl.blocked = true
	sl.deadline = now + timeoutMs
	s.parked = sl.id
	m.touch(m.res[rk], now)
	return mOut{blocked: true}
}

func (m *model) close(si int, now int64) {
	s := m.sess[si]
	// Waiters (and lapsed grants) first, then holds: releasing a hold must
	// not grant this closing session's own queued waiter (§D.4).
	for _, holds := range [2]bool{false, true} {
		for _, id := range s.claims {
			m.closeClaim(si, id, holds, now)
		}
	}
	s.claims = nil
	s.enq = map[resKey]int{}
	s.parked = 0
	s.closed = true
}

func (m *model) closeClaim(si, id int, holds bool, now int64) {
	{
		sl := m.slots[id]
		if sl == nil || sl.sess != si || (sl.state == slotHolding) != holds {
			return
		}
		switch sl.state {
		case slotWaiting:
			r := m.res[sl.rk]
			r.queue = removeID(r.queue, sl.id)
			m.free(sl)
			m.touch(r, now)
		case slotHolding:
			if m.cfg.keep {
				sl.twoPhase = false // nobody is left to observe a lapse
			} else {
				m.releaseHolder(sl, now)
			}
		case slotLapsed:
			m.free(sl)
		}
	}
}

func (m *model) gc(now int64) {
	for rk, r := range m.res {
		if r.idle() && now-r.lastActive >= m.cfg.gcIdle {
			// A lapsed grant goes with its key: w then finds no enqueue.
			for _, sl := range m.slots {
				if sl.rk == rk && sl.state == slotLapsed {
					m.free(sl)
				}
			}
			delete(m.res, rk)
			m.keys--
		}
	}
}

// apply runs one request at time now.
func (m *model) apply(si int, req *vocab.Request, now int64) mOut {
	rk := resKey{nsLock, string(req.Key)}
	if req.Op.Semaphore() {
		rk.ns = nsSem
	}
	limit := int(max(req.Limit, 1))
	lease := m.cfg.defaultLease
	if req.Lease != 0 {
		lease = req.Lease * 1000
	}
	tok, valid := fence.ParseToken(req.Token)
	switch req.Op {
	case vocab.OpLock, vocab.OpSemLock:
		return m.acquire(si, rk, limit, req.Timeout*1000, lease, now)
	case vocab.OpRelease, vocab.OpSemRelease:
		return m.release(rk, tok, valid, now)
	case vocab.OpRenew, vocab.OpSemRenew:
		return m.renew(rk, tok, valid, lease, now)
	case vocab.OpEnqueue, vocab.OpSemEnqueue:
		return m.enqueue(si, rk, limit, lease, now)
	case vocab.OpWait, vocab.OpSemWait:
		return m.wait(si, rk, req.Timeout*1000, now)
	}
	panic("model: op " + req.Op.String())
}

// ---- timers ----

func (m *model) nextDeadline() (int64, bool) {
	best, ok := int64(math.MaxInt64), false
	for _, sl := range m.slots {
		if sl.deadline != 0 && sl.deadline < best {
			best, ok = sl.deadline, true
		}
	}
	return best, ok
}

// dueGroup is what falls due on one key at one millisecond.
type dueGroup struct {
	leases, timeouts []int
}

func (m *model) dueAt(t int64) []dueGroup {
	byKey := map[resKey]*dueGroup{}
	var order []resKey
	ids := slices.Sorted(maps.Keys(m.slots))
	for _, id := range ids {
		sl := m.slots[id]
		if sl.deadline != t {
			continue
		}
		g := byKey[sl.rk]
		if g == nil {
			g = &dueGroup{}
			byKey[sl.rk] = g
			order = append(order, sl.rk)
		}
		if sl.state == slotHolding {
			g.leases = append(g.leases, id)
		} else {
			g.timeouts = append(g.timeouts, id)
		}
	}
	out := make([]dueGroup, 0, len(order))
	for _, rk := range order {
		out = append(out, *byKey[rk])
	}
	return out
}

// fireLease and fireTimeout fire the timer of slot id if it is still
// armed for t. What the firing starts (a lease handed to the next waiter,
// activity) dates from now, the instant of the Expire call: a grant made
// late must not come with a lease that ran out before it was made.
func (m *model) fireLease(id int, t, now int64) {
	if sl := m.slots[id]; sl != nil && sl.state == slotHolding && sl.deadline == t {
		m.expireHolder(sl, now)
	}
}

func (m *model) fireTimeout(id int, t, now int64) {
	if sl := m.slots[id]; sl != nil && sl.state == slotWaiting && sl.blocked && sl.deadline == t {
		m.timeoutWaiter(sl, now)
	}
}

// modelTies counts the lease/timeout ties met, for the test's log.
var modelTies int

// maxTieWorlds bounds the orders tried for one tie; the generator never
// gets near it with five sessions and limits up to three.
const maxTieWorlds = 1 << 12

// fireGroup fires one key's timers due at t. Lease expiries commute with
// each other, and so do timeouts; what matters is, for each timeout, how
// many of the lease expiries came before it, so those are the orders tried.
func (m *model) fireGroup(g dueGroup, t, now int64) []*model {
	if len(g.leases) == 0 || len(g.timeouts) == 0 {
		for _, id := range g.timeouts {
			m.fireTimeout(id, t, now)
		}
		for _, id := range g.leases {
			m.fireLease(id, t, now)
		}
		return []*model{m}
	}
	modelTies++
	a := len(g.leases)
	n := 1
	for range g.timeouts {
		n *= a + 1
		if n > maxTieWorlds {
			panic(fmt.Sprintf("model: tie of %d leases and %d timeouts", a, len(g.timeouts)))
		}
	}
	out := make([]*model, 0, n)
	before := make([]int, len(g.timeouts))
	for code := range n {
		c := code
		for i := range before {
			before[i] = c % (a + 1)
			c /= a + 1
		}
		w := m.clone()
		for k := 0; k <= a; k++ {
			for i, id := range g.timeouts {
				if before[i] == k {
					w.fireTimeout(id, t, now)
				}
			}
			if k < a {
				w.fireLease(g.leases[k], t, now)
			}
		}
		out = append(out, w)
	}
	return out
}

// expire fires every timer due at or before now in deadline order, as
// Engine.Expire does, and returns every world that may result.
func (m *model) expire(now int64) []*model {
	var done []*model
	todo := []*model{m}
	for len(todo) > 0 {
		w := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		t, ok := w.nextDeadline()
		if !ok || t > now {
			done = append(done, w)
			continue
		}
		branches := []*model{w}
		for _, g := range w.dueAt(t) {
			var next []*model
			for _, b := range branches {
				next = append(next, b.fireGroup(g, t, now)...)
			}
			branches = dedupeWorlds(next)
		}
		todo = append(todo, branches...)
	}
	return dedupeWorlds(done)
}

// fingerprint is the world's whole state, for deduplication.
func (m *model) fingerprint() string {
	var b strings.Builder
	fmt.Fprintf(&b, "k%d g%d|", m.keys, m.grants)
	rks := slices.SortedFunc(maps.Keys(m.res), func(x, y resKey) int {
		return strings.Compare(x.String(), y.String())
	})
	for _, rk := range rks {
		r := m.res[rk]
		fmt.Fprintf(&b, "%v:%d:%d:%v:%v|", rk, r.limit, r.lastActive, r.holders, r.queue)
	}
	for _, id := range slices.Sorted(maps.Keys(m.slots)) {
		fmt.Fprintf(&b, "%+v|", *m.slots[id])
	}
	for i, s := range m.sess {
		fmt.Fprintf(&b, "s%d:%v:%d:%v:%v|", i, s.closed, s.parked, s.claims, s.enq)
	}
	// Deliveries go to distinct sessions; their order within a step is not
	// observable (the engine's is by shard, the model's by deadline).
	dl := slices.Clone(m.delivered)
	slices.SortFunc(dl, func(x, y mDelivery) int { return x.sess - y.sess })
	fmt.Fprintf(&b, "%v", dl)
	return b.String()
}

func dedupeWorlds(ws []*model) []*model {
	if len(ws) <= 1 {
		return ws
	}
	seen := map[string]bool{}
	out := ws[:0]
	for _, w := range ws {
		if f := w.fingerprint(); !seen[f] {
			seen[f] = true
			out = append(out, w)
		}
	}
	return out
}

// ---- engine side ----

// orderedRecorder keeps every delivery in order.
type orderedRecorder struct {
	log []loggedDelivery
}

type loggedDelivery struct {
	s SessionID
	r Result
}

func (o *orderedRecorder) take() []loggedDelivery {
	l := o.log
	o.log = nil
	return l
}

// engRun applies c (Kind 255: Advance) at the clock's time and logs its
// effects in order.
func (d *modelRun) engRun(c Command) Result {
	var fx Effects
	var r Result
	c.At = d.clock.Now()
	if c.Kind == Kind(255) {
		d.eng.Advance(c.At, &fx)
	} else {
		r = d.eng.Apply(&c, &fx)
	}
	for _, f := range fx.List {
		d.rec.log = append(d.rec.log, loggedDelivery{f.To, f.Result})
	}
	return r
}

type snapSlot struct {
	sess     SessionID
	token    fence.Token
	twoPhase bool
	blocked  bool
	armed    bool
	deadline int64
}

type snapRes struct {
	limit          int
	lastActive     int64
	holders, queue []snapSlot
}

// snapshotEngine reads every resource under its shard lock.
func snapshotEngine(e *Engine) map[resKey]snapRes {
	out := map[resKey]snapRes{}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				k := r.key()
				sr := snapRes{limit: int(r.limit), lastActive: int64(r.lastActive)}
				list := func(l slotRun) []snapSlot {
					var ss []snapSlot
					n := 0
					for sl := l.head; sl != nil; sl = sl.next {
						ss = append(ss, snapSlot{sl.sess.id, e.token(sl.fence), sl.twoPhase(), sl.blocked(), sl.timer.Armed(), int64(sl.timer.Deadline())})
						n++
					}
					if n != l.n {
						panic(fmt.Sprintf("slot list of %s has %d entries, n=%d", k, n, l.n))
					}
					return ss
				}
				runs := sh.runs(r)
				sr.holders = list(runs[0])
				sr.queue = list(runs[1])
				out[resKey{namespace(ns), k}] = sr
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// ---- the driver ----

var (
	modelLockKeys = []string{"a", "b"}
	modelSemKeys  = []string{"a", "s"} // "a" is both: namespaces are separate
)

const modelLiveSessions = 5

type modelRun struct {
	t     *testing.T
	seed  uint64
	rng   *rand.Rand
	clock *timerwheel.FakeClock
	rec   *orderedRecorder
	eng   *Engine
	lazy  bool // advances sometimes skip Expire: exercises lazy eviction

	sessions []SessionID
	index    map[SessionID]int
	live     []int
	parked   []bool // engine-side: sessions with a parked request
	closed   []bool

	worlds    []*model
	seen      map[fence.Token]bool
	lastFence uint64
	known     []knownToken
	trace     []string

	fenceMark uint64
	stepNo    int
	opSession int // the session of the request being checked
}

type knownToken struct {
	rk  resKey
	tok fence.Token
}

func TestModel(t *testing.T) {
	seeds, steps := 150, 300
	if testing.Short() {
		seeds = 30
	}
	if *modelSeeds > 0 {
		seeds = *modelSeeds
	}
	if *modelSteps > 0 {
		steps = *modelSteps
	}
	first, last := uint64(1), uint64(seeds)
	if *modelSeed != 0 {
		first, last = *modelSeed, *modelSeed
	}
	worldsMax := 1
	modelTies = 0
	for seed := first; seed <= last; seed++ {
		d := newModelRun(t, seed)
		for range steps {
			d.randomStep()
			worldsMax = max(worldsMax, len(d.worlds))
		}
		d.finish()
		if t.Failed() {
			return
		}
	}
	t.Logf("%d seeds x %d steps; %d lease/timeout ties; at most %d worlds at once", last-first+1, steps, modelTies, worldsMax)
}

func newModelRun(t *testing.T, seed uint64) *modelRun {
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64656c))
	d := &modelRun{
		t: t, seed: seed, rng: rng,
		clock: timerwheel.NewFakeClock(1000),
		rec:   &orderedRecorder{},
		lazy:  rng.IntN(2) == 0,
		index: map[SessionID]int{},
		seen:  map[fence.Token]bool{},
	}
	cfg := Config{
		Shards:           []int{1, 4}[rng.IntN(2)],
		DefaultLease:     2 * time.Second,
		KeepOnDisconnect: rng.IntN(3) == 0,
		Start:            d.clock.Now(),
		TokenKey:         testKey,
	}
	mc := modelCfg{maxLocks: DefaultMaxLocks, maxWaiters: math.MaxInt, keep: cfg.KeepOnDisconnect, defaultLease: 2000}
	if rng.IntN(3) == 0 {
		cfg.MaxLocks, mc.maxLocks = 3, 3
	}
	if rng.IntN(3) == 0 {
		cfg.MaxWaiters, mc.maxWaiters = 2, 2
	}
	if rng.IntN(2) == 0 {
		cfg.GCMaxIdle, mc.gcIdle = -1, 0
	} else {
		cfg.GCMaxIdle, mc.gcIdle = 2*time.Second, 2000
	}
	d.eng = New(cfg)
	d.worlds = []*model{newModel(mc)}
	d.tracef("config %+v lazy=%v", mc, d.lazy)
	for range modelLiveSessions {
		d.addSession()
	}
	return d
}

func (d *modelRun) now() int64 { return int64(d.clock.Now().Tick()) }

func (d *modelRun) tracef(format string, args ...any) {
	d.trace = append(d.trace, fmt.Sprintf("%4d t=%-6d ", d.stepNo, d.now())+fmt.Sprintf(format, args...))
}

func (d *modelRun) fatalf(format string, args ...any) {
	d.t.Helper()
	tr := d.trace
	if len(tr) > 60 {
		tr = tr[len(tr)-60:]
	}
	d.t.Fatalf("seed %d step %d: %s\n(rerun: go test -run TestModel ./engine/ -args -engine.modelseed=%d)\nlast operations:\n  %s",
		d.seed, d.stepNo, fmt.Sprintf(format, args...), d.seed, strings.Join(tr, "\n  "))
}

func (d *modelRun) addSession() {
	s := d.engRun(Command{Kind: KindOpen}).Session
	d.index[s] = len(d.sessions)
	d.live = append(d.live, len(d.sessions))
	d.sessions = append(d.sessions, s)
	d.parked = append(d.parked, false)
	d.closed = append(d.closed, false)
	for _, w := range d.worlds {
		w.addSession()
	}
}

func (d *modelRun) beginStep() {
	d.stepNo++
	d.fenceMark = d.eng.LastFence()
	for _, w := range d.worlds {
		w.delivered = nil
		w.grants = 0
	}
}

// endStep compares the engine's effects with every world and keeps those
// that agree. reply is nil for steps that are not requests.
func (d *modelRun) endStep(op *vocab.Request, reply *Result, want []mOut) {
	d.t.Helper()
	delivs := d.rec.take()
	grants := int(d.eng.LastFence() - d.fenceMark)
	snap := snapshotEngine(d.eng)
	d.checkEngine(op, reply, delivs, snap)

	var kept []*model
	var firstErr error
	for i, w := range d.worlds {
		var err error
		if reply != nil {
			err = d.matchOut(w, "reply", *reply, want[i])
		}
		if err == nil {
			err = d.matchWorld(w, delivs, snap, grants)
		}
		if err == nil {
			kept = append(kept, w)
		} else if firstErr == nil {
			firstErr = err
		}
	}
	if len(kept) == 0 {
		d.fatalf("engine and model disagree (%d world(s) tried; first: %v)", len(d.worlds), firstErr)
	}
	d.worlds = dedupeWorlds(kept)
}

// checkEngine asserts what holds whatever the model says: deliveries only
// to parked sessions and one each, fresh tokens with strictly increasing
// fences, and the resource invariants.
func (d *modelRun) checkEngine(op *vocab.Request, reply *Result, delivs []loggedDelivery, snap map[resKey]snapRes) {
	d.t.Helper()
	fresh := func(what string, r Result) {
		if d.seen[r.Token] {
			d.fatalf("%s: grant reuses token %v", what, r.Token)
		}
		if r.Token.Fence <= d.lastFence {
			d.fatalf("%s: fence %d not above the previous grant's %d", what, r.Token.Fence, d.lastFence)
		}
		d.lastFence = r.Token.Fence
		d.seen[r.Token] = true
	}
	for _, ld := range delivs {
		si, ok := d.index[ld.s]
		if !ok {
			d.fatalf("delivery to an unknown session")
		}
		if !d.parked[si] {
			d.fatalf("delivery %+v to session %d, which has no parked request (closed=%v)", ld.r, si, d.closed[si])
		}
		d.parked[si] = false
		d.tracef("  -> s%d delivered %s", si, fmtResult(ld.r))
		if ld.r.Kind == KindGrant {
			fresh(fmt.Sprintf("delivery to s%d", si), ld.r)
		}
	}
	if reply != nil {
		if reply.Blocked {
			d.parked[d.opSession] = true
		}
		if reply.Kind == KindGrant {
			switch op.Op {
			case vocab.OpWait, vocab.OpSemWait:
				// w answers with a grant made earlier, which the
				// snapshot at the end of that step has seen.
				if !d.seen[reply.Token] {
					d.fatalf("w answered with a token never granted: %v", reply.Token)
				}
			default:
				fresh("reply", *reply)
			}
		}
	}
	blocked := make([]int, len(d.sessions))
	for rk, r := range snap {
		if len(r.holders) > r.limit {
			d.fatalf("%v: %d holders over limit %d", rk, len(r.holders), r.limit)
		}
		if rk.ns == nsLock && r.limit != 1 {
			d.fatalf("%v: lock with limit %d", rk, r.limit)
		}
		if len(r.queue) > 0 && len(r.holders) < r.limit {
			d.fatalf("%v: %d waiters queued while %d of %d slots are held", rk, len(r.queue), len(r.holders), r.limit)
		}
		for _, h := range r.holders {
			if !h.armed {
				d.fatalf("%v: holder without a lease timer", rk)
			}
			d.seen[h.token] = true
		}
		for _, q := range r.queue {
			if q.armed != q.blocked {
				d.fatalf("%v: waiter armed=%v blocked=%v", rk, q.armed, q.blocked)
			}
			if q.blocked {
				blocked[d.index[q.sess]]++
			}
		}
	}
	for si, n := range blocked {
		if d.closed[si] {
			if n != 0 {
				d.fatalf("closed s%d has %d blocked waiter(s)", si, n)
			}
			continue
		}
		if want := map[bool]int{false: 0, true: 1}[d.parked[si]]; n != want {
			d.fatalf("s%d: parked=%v but %d blocked waiter(s) in the engine", si, d.parked[si], n)
		}
	}
	if got := d.eng.Keys(); got != len(snap) {
		d.fatalf("Keys() = %d, shards hold %d resources", got, len(snap))
	}
}

func fmtResult(r Result) string {
	switch {
	case r.Blocked:
		return "blocked"
	case r.Kind == KindGrant:
		return fmt.Sprintf("%v %d/%d %d", r.Status, r.Token.Fence, r.Token.Salt, r.Lease)
	case r.Kind == KindRenew:
		return fmt.Sprintf("ok %d (renew %d/%d)", r.Lease, r.Token.Fence, r.Token.Salt)
	}
	return r.Status.String()
}

// bind ties an engine token to a model slot, or checks an earlier binding.
func bind(w *model, sl *mSlot, tok fence.Token) error {
	if sl.bound {
		if sl.token != tok {
			return fmt.Errorf("slot %d has token %v, engine says %v", sl.id, sl.token, tok)
		}
		return nil
	}
	for _, o := range w.slots {
		if o.bound && o.token == tok {
			return fmt.Errorf("token %v of slot %d also given to slot %d", tok, o.id, sl.id)
		}
	}
	sl.token, sl.bound = tok, true
	return nil
}

func (d *modelRun) matchOut(w *model, what string, got Result, want mOut) error {
	if got.Blocked != want.blocked {
		return fmt.Errorf("%s: engine %s, model %s", what, fmtResult(got), want)
	}
	if want.blocked {
		return nil
	}
	if got.Status != want.status || got.Kind != want.kind || got.Lease != want.lease {
		return fmt.Errorf("%s: engine %s, model %s", what, fmtResult(got), want)
	}
	if want.kind == KindStatus {
		if got.Token != (fence.Token{}) {
			return fmt.Errorf("%s: status reply carries token %v", what, got.Token)
		}
		return nil
	}
	sl := w.slots[want.slot]
	if sl == nil {
		return nil // freed later in the same step (a back-dated lease)
	}
	if err := bind(w, sl, got.Token); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	return nil
}

func (d *modelRun) matchWorld(w *model, delivs []loggedDelivery, snap map[resKey]snapRes, grants int) error {
	if w.grants != grants {
		return fmt.Errorf("engine made %d grants, model %d", grants, w.grants)
	}
	got := map[int]Result{}
	for _, ld := range delivs {
		si := d.index[ld.s]
		if _, dup := got[si]; dup {
			return fmt.Errorf("two deliveries to s%d in one step", si)
		}
		got[si] = ld.r
	}
	want := map[int]mOut{}
	for _, md := range w.delivered {
		if _, dup := want[md.sess]; dup {
			panic("model delivered twice to one session")
		}
		want[md.sess] = md.out
	}
	for si, o := range want {
		r, ok := got[si]
		if !ok {
			return fmt.Errorf("model delivers %s to s%d, engine nothing", o, si)
		}
		if err := d.matchOut(w, fmt.Sprintf("delivery to s%d", si), r, o); err != nil {
			return err
		}
	}
	for si, r := range got {
		if _, ok := want[si]; !ok {
			return fmt.Errorf("engine delivers %s to s%d, model nothing", fmtResult(r), si)
		}
	}

	if len(snap) != len(w.res) || w.keys != len(w.res) {
		return fmt.Errorf("engine has %d keys, model %d (counter %d)", len(snap), len(w.res), w.keys)
	}
	for rk, mr := range w.res {
		er, ok := snap[rk]
		if !ok {
			return fmt.Errorf("model has %v, engine not", rk)
		}
		if er.limit != mr.limit || len(er.holders) != len(mr.holders) || len(er.queue) != len(mr.queue) ||
			er.lastActive != mr.lastActive {
			return fmt.Errorf("%v: engine limit %d holders %d queue %d last active %d, model %d %d %d %d",
				rk, er.limit, len(er.holders), len(er.queue), er.lastActive, mr.limit, len(mr.holders), len(mr.queue), mr.lastActive)
		}
		for i, id := range mr.holders {
			sl, es := w.slots[id], er.holders[i]
			if d.index[es.sess] != sl.sess || es.twoPhase != sl.twoPhase || es.deadline != sl.deadline {
				return fmt.Errorf("%v holder %d: engine s%d twoPhase=%v deadline=%d, model s%d %v %d",
					rk, i, d.index[es.sess], es.twoPhase, es.deadline, sl.sess, sl.twoPhase, sl.deadline)
			}
			if err := bind(w, sl, es.token); err != nil {
				return fmt.Errorf("%v holder %d: %v", rk, i, err)
			}
		}
		for i, id := range mr.queue {
			sl, es := w.slots[id], er.queue[i]
			if d.index[es.sess] != sl.sess || es.twoPhase != sl.twoPhase || es.blocked != sl.blocked ||
				(sl.blocked && es.deadline != sl.deadline) {
				return fmt.Errorf("%v waiter %d: engine s%d twoPhase=%v blocked=%v deadline=%d, model s%d %v %v %d",
					rk, i, d.index[es.sess], es.twoPhase, es.blocked, es.deadline, sl.sess, sl.twoPhase, sl.blocked, sl.deadline)
			}
		}
	}
	for si, ms := range w.sess {
		if ms.closed {
			continue
		}
		if (ms.parked != 0) != d.parked[si] {
			return fmt.Errorf("s%d: model parked=%d, engine parked=%v", si, ms.parked, d.parked[si])
		}
		// The engine's live enqueue states (stale records are ignored by
		// Session.enqueued, so they are here too).
		s := d.eng.sessions.get(d.sessions[si])
		live := map[resKey]*slot{}
		for ns, m := range s.enq {
			for k, c := range m {
				if c.sl.gen.Load() == c.gen && c.sl.sess == s && c.sl.state() != slotFree {
					live[resKey{namespace(ns), k}] = c.sl
				}
			}
		}
		if len(live) != len(ms.enq) {
			return fmt.Errorf("s%d: engine has %d enqueue states, model %d (%v)", si, len(live), len(ms.enq), ms.enq)
		}
		for rk, id := range ms.enq {
			esl, msl := live[rk], w.slots[id]
			if esl == nil || esl.state() != msl.state {
				return fmt.Errorf("s%d %v: enqueue state differs (model slot %+v)", si, rk, *msl)
			}
		}
	}
	return nil
}

// ---- operations ----

// request runs one request on the engine and in every world.
func (d *modelRun) request(si int, req vocab.Request) {
	d.t.Helper()
	d.beginStep()
	d.opSession = si
	d.tracef("s%d %s", si, fmtRequest(&req))
	got := d.engRun(Command{Kind: KindRequest, Session: d.sessions[si], Req: req})
	d.tracef("  => %s", fmtResult(got))
	now := d.now()
	want := make([]mOut, len(d.worlds))
	for i, w := range d.worlds {
		want[i] = w.apply(si, &req, now)
	}
	d.endStep(&req, &got, want)
	if got.Kind == KindGrant || got.Kind == KindRenew {
		rk := resKey{nsLock, string(req.Key)}
		if req.Op.Semaphore() {
			rk.ns = nsSem
		}
		d.known = append(d.known, knownToken{rk, got.Token})
	}
}

func fmtRequest(r *vocab.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Op, r.Key)
	switch r.Op {
	case vocab.OpLock, vocab.OpSemLock:
		fmt.Fprintf(&b, " timeout=%d", r.Timeout)
	case vocab.OpWait, vocab.OpSemWait:
		fmt.Fprintf(&b, " timeout=%d", r.Timeout)
	case vocab.OpRelease, vocab.OpSemRelease, vocab.OpRenew, vocab.OpSemRenew:
		if t, ok := fence.ParseToken(r.Token); ok {
			fmt.Fprintf(&b, " tok=%d/%d", t.Fence, t.Salt)
		} else {
			fmt.Fprintf(&b, " tok=%q", r.Token)
		}
	}
	if r.Limit != 0 {
		fmt.Fprintf(&b, " limit=%d", r.Limit)
	}
	if r.Lease != 0 {
		fmt.Fprintf(&b, " lease=%d", r.Lease)
	}
	return b.String()
}

func (d *modelRun) expire() {
	d.t.Helper()
	d.beginStep()
	d.tracef("expire")
	d.engRun(Command{Kind: Kind(255)})
	now := d.now()
	var next []*model
	for _, w := range d.worlds {
		next = append(next, w.expire(now)...)
	}
	d.worlds = next
	d.endStep(nil, nil, nil)
}

func (d *modelRun) advance(dt int64, fire bool) {
	d.clock.Add(timerwheel.Tick(dt))
	d.tracef("advance %d ms", dt)
	if fire {
		d.expire()
	}
}

func (d *modelRun) closeSession(si int) {
	d.t.Helper()
	d.beginStep()
	d.tracef("close s%d", si)
	d.engRun(Command{Kind: KindClose, Session: d.sessions[si]})
	now := d.now()
	for _, w := range d.worlds {
		w.close(si, now)
	}
	d.closed[si] = true
	d.live = slices.DeleteFunc(d.live, func(i int) bool { return i == si })
	// Close cancels the session's waiters before releasing its holds, so
	// nothing is delivered to the closing session, then or later.
	d.endStep(nil, nil, nil)
	d.parked[si] = false
}

func (d *modelRun) gc() {
	d.t.Helper()
	d.beginStep()
	d.tracef("gc")
	d.engRun(Command{Kind: KindGC})
	now := d.now()
	for _, w := range d.worlds {
		w.gc(now)
	}
	d.endStep(nil, nil, nil)
}

func (d *modelRun) randomStep() {
	x := d.rng.IntN(100)
	switch {
	case x < 12:
		d.randomAdvance()
	case x < 15:
		d.closeSession(d.live[d.rng.IntN(len(d.live))])
		d.addSession()
	case x < 18:
		d.gc()
	case x < 21 && d.lazy:
		d.expire()
	default:
		d.randomRequest()
	}
}

func (d *modelRun) randomAdvance() {
	w := d.worlds[0]
	var dt int64
	next, ok := w.nextDeadline()
	switch x := d.rng.IntN(10); {
	case x < 3 && ok && next > d.now():
		dt = next - d.now() // land exactly on a deadline
	case x < 4 && ok && next > d.now()+1:
		dt = next - d.now() - 1
	case x < 7:
		dt = 1 + d.rng.Int64N(999)
	default:
		dt = 1000 + d.rng.Int64N(2500)
	}
	d.advance(dt, !d.lazy || d.rng.IntN(2) == 0)
}

var modelOps = []struct {
	op     vocab.Op
	weight int
}{
	{vocab.OpLock, 16}, {vocab.OpSemLock, 12}, {vocab.OpRelease, 10}, {vocab.OpSemRelease, 7},
	{vocab.OpRenew, 4}, {vocab.OpSemRenew, 3}, {vocab.OpEnqueue, 8}, {vocab.OpSemEnqueue, 6},
	{vocab.OpWait, 8}, {vocab.OpSemWait, 6},
}

func (d *modelRun) randomRequest() {
	var free []int
	for _, si := range d.live {
		if !d.parked[si] {
			free = append(free, si)
		}
	}
	if len(free) == 0 {
		d.randomAdvance()
		return
	}
	si := free[d.rng.IntN(len(free))]
	total := 0
	for _, o := range modelOps {
		total += o.weight
	}
	pick := d.rng.IntN(total)
	op := modelOps[0].op
	for _, o := range modelOps {
		if pick < o.weight {
			op = o.op
			break
		}
		pick -= o.weight
	}
	rk := resKey{nsLock, modelLockKeys[d.rng.IntN(len(modelLockKeys))]}
	if op.Semaphore() {
		rk = resKey{nsSem, modelSemKeys[d.rng.IntN(len(modelSemKeys))]}
	}
	w := d.worlds[0]
	if (op == vocab.OpWait || op == vocab.OpSemWait) && d.rng.IntN(10) < 7 {
		// Mostly wait where this session has enqueued.
		var mine []resKey
		for k := range w.sess[si].enq {
			if k.ns == rk.ns {
				mine = append(mine, k)
			}
		}
		sort.Slice(mine, func(i, j int) bool { return mine[i].key < mine[j].key })
		if len(mine) > 0 {
			rk = mine[d.rng.IntN(len(mine))]
		}
	}
	req := vocab.Request{Op: op, Key: []byte(rk.key)}
	switch op {
	case vocab.OpLock, vocab.OpSemLock:
		req.Timeout = []int64{0, 0, 1, 2, 3}[d.rng.IntN(5)]
		req.Lease = d.randomLease()
	case vocab.OpRelease, vocab.OpSemRelease:
		req.Token = d.randomToken(rk)
	case vocab.OpRenew, vocab.OpSemRenew:
		req.Token = d.randomToken(rk)
		req.Lease = d.randomLease()
	case vocab.OpEnqueue, vocab.OpSemEnqueue:
		req.Lease = d.randomLease()
	case vocab.OpWait, vocab.OpSemWait:
		req.Timeout = []int64{0, 1, 2, 3}[d.rng.IntN(4)]
	}
	if rk.ns == nsSem && (op == vocab.OpSemLock || op == vocab.OpSemEnqueue) {
		req.Limit = 1 + d.rng.Int64N(3)
		if r := w.res[rk]; r != nil && d.rng.IntN(10) < 8 {
			req.Limit = int64(r.limit)
		}
	}
	d.request(si, req)
}

func (d *modelRun) randomLease() int64 {
	if d.rng.IntN(3) == 0 {
		return 0 // the server default
	}
	return 1 + d.rng.Int64N(4)
}

// randomToken picks a current holder's token, a stale or foreign one, one
// never issued, or malformed text.
func (d *modelRun) randomToken(rk resKey) []byte {
	w := d.worlds[0]
	holderTok := func(rk resKey) (fence.Token, bool) {
		r := w.res[rk]
		if r == nil || len(r.holders) == 0 {
			return fence.Token{}, false
		}
		sl := w.slots[r.holders[d.rng.IntN(len(r.holders))]]
		return sl.token, sl.bound
	}
	var t fence.Token
	ok := false
	switch x := d.rng.IntN(20); {
	case x < 12:
		t, ok = holderTok(rk)
	case x < 14:
		other := rk
		other.ns = nsLock + nsSem - rk.ns
		t, ok = holderTok(other) // the other namespace's holder
	case x < 17:
		if len(d.known) > 0 {
			t, ok = d.known[d.rng.IntN(len(d.known))].tok, true
		}
	case x < 18:
		return []byte("not-a-token")
	case x < 19:
		t, ok = holderTok(rk)
		if ok {
			return []byte(strings.ToUpper(string(t.Append(nil))))
		}
	}
	if !ok {
		t = fence.Token{Fence: 1<<62 + d.rng.Uint64N(1000), Salt: d.rng.Uint64()}
	}
	return t.Append(nil)
}

// finish lets every parked request resolve, checks that each got its one
// delivery, then closes everything and checks that GC empties the table.
func (d *modelRun) finish() {
	d.t.Helper()
	if d.t.Failed() {
		return
	}
	d.advance(10_000, true)
	for si, p := range d.parked {
		if p {
			d.fatalf("s%d still parked 10 s after its deadline", si)
		}
	}
	for _, si := range slices.Clone(d.live) {
		d.closeSession(si)
	}
	d.advance(10_000, true)
	// Leases that ended in that advance made their key active at its end.
	d.advance(2_000, true)
	d.gc()
	if n := d.eng.Keys(); n != 0 {
		d.fatalf("Keys() = %d after every session closed, every lease ended and GC", n)
	}
	if len(d.worlds) != 1 {
		d.fatalf("%d worlds left at the end", len(d.worlds))
	}
}
