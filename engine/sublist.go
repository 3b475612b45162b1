package engine

import (
	"bytes"
	"cmp"
	"errors"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// This file is the subscription index behind pub/sub signals (spec §B.9)
// and key watch (§B.10): a token trie of channel patterns in the style of
// NATS's subject list. Patterns cannot be sharded by key, so the server
// keeps one Sublist per kind of subscription (signals, watches), each
// guarded by a single RWMutex: publishers share the read lock, listen,
// unlisten and disconnect take the write lock (architecture §2.4).
//
// Pattern syntax: tokens separated by '.'; a "*" token matches exactly one
// token, a ">" token matches one or more trailing tokens and must be last.
// '*' and '>' inside a longer token ("fo*", "a>b") are errors. Empty tokens
// ("a..b", ".a", "a.") are ordinary literal tokens, as in dflockd's own
// validator and matcher (strings.Split semantics), so every valid lock key
// without '*' or '>' can be watched; only the empty pattern is refused,
// which the protocol's key validation (§A.3) never lets through anyway.
//
// A channel (a signalled name or a watched key) is matched token by token,
// literally: Match never treats its '*' or '>' as wildcards, so a watched
// lock key "a.*" is reached by the patterns "a.*", "a.>" and ">", exactly
// as dflockd's split-and-compare matcher does.

// ErrInvalidPattern is returned by Subscribe for a pattern that breaks the
// syntax above.
var ErrInvalidPattern = errors.New("engine: invalid pattern")

// Sublist indexes subscriptions (session, pattern, group) by pattern.
// The zero value is not usable; call NewSublist.
//
// Concurrency: all methods are safe for concurrent use. Match takes the
// read lock; Subscribe, Unsubscribe and RemoveAll take the write lock.
// Lock order: shard.mu → Sublist.mu (read) → a loop's inbox.mu; nothing is
// called back with the lock held.
type Sublist struct {
	// n counts registrations, read without the lock by Len so that a
	// publisher (every lock operation, for watches) can skip Match
	// entirely while nobody subscribes.
	n atomic.Int64

	mu struct {
		sync.RWMutex
		root subNode
		// bySess is the reverse index: disconnect cleanup, Count and
		// duplicate detection without walking the trie.
		bySess map[SessionID]*subState
	}
}

// subNode is one trie level. The node reached by a pattern's last token
// holds that pattern's subscriptions; full (">") nodes are always leaves.
type subNode struct {
	parent *subNode
	token  string // key in parent.lit; unused for star/full children
	// pattern is the whole pattern ending here, kept for Patterns();
	// set while the node holds subscriptions.
	pattern string

	lit  map[string]*subNode
	star *subNode
	full *subNode

	// subs holds the non-grouped subscriptions of pattern, one per
	// session, in no particular order (removal swaps the last in).
	subs []subEntry
	// queues holds pattern's queue groups in creation order.
	queues []*subQueue
}

type subEntry struct {
	s   SessionID
	st  *subState // == reg.st, saving Match a dereference
	reg *subReg
}

// subQueue is a queue group: one (pattern, name) pair.
type subQueue struct {
	pattern, name string
	// next picks the first member tried by each Match (round-robin).
	// It advances under the read lock, hence atomic.
	next atomic.Uint64
	// members in join order. Copy-on-write: a published slice is never
	// modified, so a Matches may keep using it after the lock is gone.
	members []SessionID
}

// subState is one session's registrations in this Sublist.
type subState struct {
	regs map[subKey]*subReg
	// plain counts non-grouped registrations. A session with at most one
	// cannot be reached twice by a Match, so it skips the dedup check.
	plain int
}

type subKey struct{ pattern, group string }

type subReg struct {
	st   *subState
	node *subNode
	q    *subQueue // nil for a non-grouped registration
	idx  int       // position in node.subs when q == nil
}

// PatternStat describes one non-grouped pattern or one queue group, for
// the stats arrays signal_channels and watch_channels (spec §F.1).
type PatternStat struct {
	Pattern     string
	Group       string // "" for the non-grouped subscriptions of Pattern
	Subscribers int
}

// NewSublist returns an empty index.
func NewSublist() *Sublist {
	l := &Sublist{}
	l.mu.bySess = make(map[SessionID]*subState)
	return l
}

// validPattern checks pattern syntax (see the top of this file).
func validPattern(p string) error {
	if p == "" {
		return ErrInvalidPattern
	}
	for rest := p; ; {
		tok, after, more := strings.Cut(rest, ".")
		if tok != "*" && tok != ">" && strings.ContainsAny(tok, "*>") {
			return ErrInvalidPattern
		}
		if !more {
			return nil
		}
		if tok == ">" {
			return ErrInvalidPattern // '>' must be the last token
		}
		rest = after
	}
}

// validChannel reports whether name may be signalled: non-empty and free
// of '*' and '>' anywhere (spec §A.3, RF `signal`). Other key rules
// (whitespace) are the parser's.
func validChannel(name []byte) bool {
	return len(name) > 0 && bytes.IndexByte(name, '*') < 0 && bytes.IndexByte(name, '>') < 0
}

// Len is the number of registrations. It does not lock, so a publisher can
// call it on every operation and skip Match when it returns 0.
func (l *Sublist) Len() int { return int(l.n.Load()) }

// Subscribe registers (s, pattern, group); group "" means not grouped.
// Registering an identical triple again is a no-op reporting added=false.
// The only error is ErrInvalidPattern.
//
// --max-subscriptions is the caller's: a duplicate must succeed even at
// the cap and in RF the cap spans listen + watch + observe, so check Has,
// then the sum of Count over the indexes, then Subscribe. That is race
// free because one session's calls come from one goroutine (Session).
func (l *Sublist) Subscribe(s SessionID, pattern, group string) (added bool, err error) {
	if s == 0 {
		panic("engine: Sublist.Subscribe with no session")
	}
	if err := validPattern(pattern); err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.mu.bySess[s]
	key := subKey{pattern, group}
	if st == nil {
		st = &subState{regs: make(map[subKey]*subReg)}
		l.mu.bySess[s] = st
	} else if st.regs[key] != nil {
		return false, nil
	}
	n := l.nodeForLocked(pattern)
	reg := &subReg{st: st, node: n}
	if group == "" {
		reg.idx = len(n.subs)
		n.subs = append(n.subs, subEntry{s: s, st: st, reg: reg})
		st.plain++
	} else {
		q := n.queue(group)
		if q == nil {
			q = &subQueue{pattern: pattern, name: group}
			n.queues = append(n.queues, q)
		}
		// Copy-on-write: readers may still hold the old slice.
		members := make([]SessionID, len(q.members), len(q.members)+1)
		copy(members, q.members)
		q.members = append(members, s)
		reg.q = q
	}
	st.regs[key] = reg
	l.n.Add(1)
	return true, nil
}

// Has reports whether (s, pattern, group) is registered.
func (l *Sublist) Has(s SessionID, pattern, group string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.mu.bySess[s]
	return st != nil && st.regs[subKey{pattern, group}] != nil
}

// Count is the number of s's registrations in this index.
func (l *Sublist) Count(s SessionID) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if st := l.mu.bySess[s]; st != nil {
		return len(st.regs)
	}
	return 0
}

// Unsubscribe removes (s, pattern, group) and reports whether it was
// registered. An invalid pattern is simply never registered.
func (l *Sublist) Unsubscribe(s SessionID, pattern, group string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.mu.bySess[s]
	if st == nil {
		return false
	}
	key := subKey{pattern, group}
	reg := st.regs[key]
	if reg == nil {
		return false
	}
	delete(st.regs, key)
	if len(st.regs) == 0 {
		delete(l.mu.bySess, s)
	}
	l.removeLocked(s, reg)
	return true
}

// RemoveAll drops every registration of s (disconnect, spec §D.4) and
// returns how many there were.
func (l *Sublist) RemoveAll(s SessionID) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.mu.bySess[s]
	if st == nil {
		return 0
	}
	delete(l.mu.bySess, s)
	for _, reg := range st.regs {
		l.removeLocked(s, reg)
	}
	return len(st.regs)
}

// nodeForLocked returns the node for pattern, creating the path.
func (l *Sublist) nodeForLocked(pattern string) *subNode {
	n := &l.mu.root
	for rest := pattern; ; {
		tok, after, more := strings.Cut(rest, ".")
		var c *subNode
		switch tok {
		case "*":
			if n.star == nil {
				n.star = &subNode{parent: n}
			}
			c = n.star
		case ">":
			if n.full == nil {
				n.full = &subNode{parent: n}
			}
			c = n.full
		default:
			c = n.lit[tok]
			if c == nil {
				if n.lit == nil {
					n.lit = make(map[string]*subNode)
				}
				c = &subNode{parent: n, token: tok}
				n.lit[tok] = c
			}
		}
		n = c
		if !more {
			break
		}
		rest = after
	}
	n.pattern = pattern
	return n
}

// removeLocked detaches reg (owned by s) from its node and prunes nodes
// left empty. The caller has already removed it from the subState.
func (l *Sublist) removeLocked(s SessionID, reg *subReg) {
	n := reg.node
	if q := reg.q; q != nil {
		i := slices.Index(q.members, s)
		members := make([]SessionID, 0, len(q.members)-1)
		members = append(members, q.members[:i]...)
		q.members = append(members, q.members[i+1:]...)
		if len(q.members) == 0 {
			j := slices.Index(n.queues, q)
			n.queues = slices.Delete(n.queues, j, j+1)
		}
	} else {
		last := len(n.subs) - 1
		if reg.idx != last {
			moved := n.subs[last]
			n.subs[reg.idx] = moved
			moved.reg.idx = reg.idx
		}
		n.subs[last] = subEntry{}
		n.subs = n.subs[:last]
		reg.st.plain--
	}
	l.n.Add(-1)
	l.pruneLocked(n)
}

// pruneLocked unlinks empty nodes from n up towards the root, so the trie
// (and every Match's walk) stays proportional to live patterns.
func (l *Sublist) pruneLocked(n *subNode) {
	for n.parent != nil && n.empty() {
		p := n.parent
		switch {
		case p.star == n:
			p.star = nil
		case p.full == n:
			p.full = nil
		default:
			delete(p.lit, n.token)
			if len(p.lit) == 0 {
				p.lit = nil
			}
		}
		n = p
	}
	if len(n.subs) == 0 && len(n.queues) == 0 {
		n.pattern = ""
		if cap(n.subs) > 0 {
			n.subs = nil // release a big fan-out's array
		}
	}
}

func (n *subNode) empty() bool {
	return len(n.subs) == 0 && len(n.queues) == 0 && len(n.lit) == 0 && n.star == nil && n.full == nil
}

func (n *subNode) queue(name string) *subQueue {
	for _, q := range n.queues {
		if q.name == name {
			return q
		}
	}
	return nil
}

// Patterns lists every pattern with non-grouped subscribers and every
// queue group, sorted by pattern then group (the non-grouped entry of a
// pattern, Group "", first). Never nil.
func (l *Sublist) Patterns() []PatternStat {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := []PatternStat{}
	var walk func(n *subNode)
	walk = func(n *subNode) {
		if len(n.subs) > 0 {
			out = append(out, PatternStat{Pattern: n.pattern, Subscribers: len(n.subs)})
		}
		for _, q := range n.queues {
			out = append(out, PatternStat{Pattern: n.pattern, Group: q.name, Subscribers: len(q.members)})
		}
		for _, c := range n.lit {
			walk(c)
		}
		if n.star != nil {
			walk(n.star)
		}
		if n.full != nil {
			walk(n.full)
		}
	}
	walk(&l.mu.root)
	slices.SortFunc(out, func(a, b PatternStat) int {
		return cmp.Or(strings.Compare(a.Pattern, b.Pattern), strings.Compare(a.Group, b.Group))
	})
	return out
}

// Matches receives the result of Match. Keep one per caller (an event
// loop) and reuse it: once its slices have grown, Match allocates nothing.
//
// Everything in a Matches stays valid, and unchanged by later Subscribe or
// Unsubscribe calls, until the next Match into the same Matches; it may
// name sessions that have disconnected since, which callers must tolerate.
// It keeps those sessions reachable until then.
type Matches struct {
	// Subs are the non-grouped receivers, each session once however many
	// of its patterns matched; those of the literal pattern identical to
	// the channel come first (spec §B.9 rule 1). Independent of Queues: a
	// session both grouped and not receives twice. (The RF server also
	// skipped a wildcard non-grouped delivery to a session that an exact
	// queue group had just picked; the spec's rule is followed instead.)
	Subs []SessionID
	// Queues holds one entry per matching queue group (spec §B.9 rule 2).
	Queues []QueueMatch

	// multi lists the sessions in Subs that hold several non-grouped
	// registrations: the only ones a later node can repeat.
	multi  []SessionID
	seen   seenSet // the first hashed entries of multi, once it is long
	hashed int
	nodes  int // nodes that contributed to Subs
}

// QueueMatch is one matched queue group, frozen at Match time.
type QueueMatch struct {
	q       *subQueue
	members []SessionID // copy-on-write snapshot, join order
	start   int
}

// Group identifies the queue group: the pattern it listens on and its name.
func (q *QueueMatch) Group() (pattern, name string) { return q.q.pattern, q.q.name }

// Len is the number of members of the group.
func (q *QueueMatch) Len() int { return len(q.members) }

// Member returns the i-th member to try, 0 ≤ i < Len: Member(0) is the
// round-robin choice, the following ones are the fallbacks for a member
// whose push queue is full, in join order.
func (q *QueueMatch) Member(i int) SessionID {
	i += q.start
	if i >= len(q.members) {
		i -= len(q.members)
	}
	return q.members[i]
}

// Empty reports whether the last Match found nobody.
func (m *Matches) Empty() bool { return len(m.Subs) == 0 && len(m.Queues) == 0 }

// seenLimit is the number of multi-pattern sessions below which a linear
// scan beats hashing.
const seenLimit = 16

func (m *Matches) reset() {
	clear(m.Subs)
	m.Subs = m.Subs[:0]
	clear(m.Queues)
	m.Queues = m.Queues[:0]
	clear(m.multi)
	m.multi = m.multi[:0]
	if m.hashed > 0 {
		m.seen.reset()
		m.hashed = 0
	}
	m.nodes = 0
}

// Match finds the subscriptions matching channel, a literal name whose
// tokens are all compared literally, and stores them in m (replacing its
// previous content). It advances the round-robin counter of every matched
// queue group. Cost is proportional to the trie nodes the channel's tokens
// reach plus the receivers found, not to the number of subscriptions.
//
// channel is only read during the call.
func (l *Sublist) Match(channel []byte, m *Matches) {
	m.reset()
	if l.n.Load() == 0 {
		return
	}
	l.mu.RLock()
	matchNode(&l.mu.root, channel, 0, m)
	l.mu.RUnlock()
}

// matchNode matches the tokens of ch from offset start against n's
// children; start == len(ch)+1 means every token is consumed. Literal
// children are tried first so the exact pattern's subscribers lead Subs.
func matchNode(n *subNode, ch []byte, start int, m *Matches) {
	if start > len(ch) {
		n.collect(m)
		return
	}
	end := len(ch)
	if i := bytes.IndexByte(ch[start:], '.'); i >= 0 {
		end = start + i
	}
	if n.lit != nil {
		if c := n.lit[string(ch[start:end])]; c != nil {
			matchNode(c, ch, end+1, m)
		}
	}
	if n.star != nil {
		matchNode(n.star, ch, end+1, m)
	}
	if n.full != nil {
		n.full.collect(m) // at least one token is left for '>'
	}
}

// collect adds the subscriptions of the pattern ending at n.
func (n *subNode) collect(m *Matches) {
	if len(n.subs) > 0 {
		m.nodes++
		if m.nodes == 1 {
			// Sessions are unique within a node: no check needed.
			for _, e := range n.subs {
				m.Subs = append(m.Subs, e.s)
				if e.st.plain > 1 {
					m.multi = append(m.multi, e.s)
				}
			}
		} else {
			for _, e := range n.subs {
				if e.st.plain > 1 {
					if m.saw(e.s) {
						continue
					}
					m.multi = append(m.multi, e.s)
				}
				m.Subs = append(m.Subs, e.s)
			}
		}
	}
	for _, q := range n.queues {
		members := q.members
		m.Queues = append(m.Queues, QueueMatch{
			q:       q,
			members: members,
			start:   int((q.next.Add(1) - 1) % uint64(len(members))),
		})
	}
}

// saw reports whether s is already among the multi-pattern receivers.
func (m *Matches) saw(s SessionID) bool {
	if len(m.multi) <= seenLimit {
		return slices.Contains(m.multi, s)
	}
	for _, x := range m.multi[m.hashed:] {
		m.seen.add(x)
	}
	m.hashed = len(m.multi)
	return m.seen.has(s)
}

// seenSet is an open-addressing set of session ids. Generation
// stamps empty it in O(1) between matches, where a Go map would need a
// clear proportional to its size and costs several times more per
// operation on this path (measured: BenchmarkSublistMatch/fanout_1000_dedup).
type seenSet struct {
	slots []seenSlot // len is a power of two, at least twice the entries
	shift uint8      // 64 - log2(len(slots))
	gen   uint32
	n     int // entries of generation gen
}

type seenSlot struct {
	addr SessionID
	gen  uint32
}

func (t *seenSet) reset() {
	t.n = 0
	t.gen++
	if t.gen == 0 { // wrapped: old stamps would look current
		clear(t.slots)
		t.gen = 1
	}
}

func (t *seenSet) slot(addr SessionID) int {
	return int(uint64(addr) * 0x9e3779b97f4a7c15 >> t.shift) // Fibonacci hashing
}

func (t *seenSet) has(s SessionID) bool {
	if t.n == 0 {
		return false
	}
	addr := s
	mask := len(t.slots) - 1
	for i := t.slot(addr); ; i = (i + 1) & mask {
		switch sl := &t.slots[i]; {
		case sl.gen != t.gen:
			return false
		case sl.addr == addr:
			return true
		}
	}
}

// add inserts s, which must not be present.
func (t *seenSet) add(s SessionID) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.put(s)
	t.n++
}

func (t *seenSet) put(addr SessionID) {
	mask := len(t.slots) - 1
	i := t.slot(addr)
	for t.slots[i].gen == t.gen {
		i = (i + 1) & mask
	}
	t.slots[i] = seenSlot{addr: addr, gen: t.gen}
}

func (t *seenSet) grow() {
	old := t.slots
	size := max(4*seenLimit, 2*len(old))
	t.slots = make([]seenSlot, size)
	t.shift = uint8(64 - bits.Len(uint(size-1)))
	if t.gen == 0 {
		t.gen = 1 // first use: zeroed slots must not look current
	}
	for _, sl := range old {
		if sl.gen == t.gen {
			t.put(sl.addr)
		}
	}
}
