// Package deadlock finds the deadlocks of a wait-for snapshot of lock
// queues: sets of sessions each parked on a key that only sessions of the
// set could give it. It is a pure function of its input (no locks, no
// clock, no state), so that the engine takes the snapshot and anyone may
// run the search: the HTTP API on its schedule, tests against a model.
//
// The model. A session is parked when at least one of its claims is a
// Blocked waiter (l, sl, rl/wl, w after e, a parked tagged acquire): its
// client waits for that reply. A session that is not parked can act, and
// is assumed to release what it holds in the end; a parked one resumes
// when any of its blocked claims is granted. Grants follow the engine's
// rules: strict FIFO, as many queue heads as fit (readers as a batch,
// a writer alone). Simulating that from the snapshot until nothing more
// can happen leaves the sessions that can never resume: a waiter among
// them waits for holders, and for claims queued ahead of it, that are
// all stuck too, so they form cycles of the wait-for graph (with the
// sessions stuck only behind a cycle hanging off them).
//
// Waits nobody holds (blocking pops, barriers) are not in the graph: any
// session might end them, so their sessions count as able to act. A
// lease that runs out also ends a deadlock; clients that renew in the
// background keep it.
package deadlock

import (
	"cmp"
	"slices"
)

// Claim is one session's claim on a resource.
type Claim struct {
	Session uint64
	Writer  bool // the write side of a read-write lock
	// Blocked: a queued claim the session is parked on. Holders are
	// never blocked.
	Blocked bool
}

// Resource is a lock, semaphore or read-write lock with its claims.
type Resource struct {
	Key  string
	Kind string // for reports: "lock", "semaphore", "rwlock"
	// Limit is the capacity of a lock (1) or semaphore; RW locks ignore
	// it: readers share, a writer holds alone.
	Limit   int
	RW      bool
	Holders []Claim
	Queue   []Claim // FIFO, head first
}

// Graph is a wait-for snapshot. Only resources with a queue matter.
type Graph struct {
	Resources []Resource
}

// Deadlock is one cycle (a strongly connected set) of stuck sessions.
type Deadlock struct {
	Sessions []uint64 // ascending
	Keys     []Key    // the keys its waits are on, in (key, kind) order
	Waits    []Wait   // per member and key: what its blocked claims wait on inside the cycle
	// Behind are stuck sessions outside any cycle that wait, directly or
	// not, on this one's sessions (ascending).
	Behind []uint64
}

// Key names a resource in a report.
type Key struct {
	Key  string
	Kind string
}

// Wait is a member's blocked claims on one key and the members they wait
// for: the holders of the key and the members queued ahead there.
type Wait struct {
	Session uint64
	Key     Key
	On      []uint64 // ascending
}

// claimRef locates a claim in the simulation.
type claimRef struct {
	res   int
	queue bool // in the queue (else among the holders)
	i     int
}

// sim is the simulation's state.
type sim struct {
	g        *Graph
	sessions map[uint64]*node
	res      []resState
	work     []*node
}

type node struct {
	id     uint64
	claims []claimRef
	parked bool // has a blocked claim not granted yet
	done   bool // resumed or never parked: its claims are released
	// Tarjan's bookkeeping.
	index, low int
	onStack    bool
	scc        int
}

type resState struct {
	holderAlive []bool
	queueAlive  []bool
	queueGone   []bool // granted from the queue (alive then means held)
	head        int    // first queue entry not yet granted or dead
	held        int
	writerHeld  bool
}

// Find returns the deadlocks of g, ordered by their first session. It
// does not modify g.
func Find(g *Graph) []Deadlock {
	s := &sim{g: g, sessions: make(map[uint64]*node), res: make([]resState, len(g.Resources))}
	s.index()
	for len(s.work) > 0 {
		n := s.work[len(s.work)-1]
		s.work = s.work[:len(s.work)-1]
		s.finish(n)
	}
	return s.report()
}

func (s *sim) node(id uint64) *node {
	n := s.sessions[id]
	if n == nil {
		n = &node{id: id, index: -1}
		s.sessions[id] = n
	}
	return n
}

// index builds the per-session claim lists and queues the sessions that
// are not parked.
func (s *sim) index() {
	for ri := range s.g.Resources {
		r, st := &s.g.Resources[ri], &s.res[ri]
		st.holderAlive = make([]bool, len(r.Holders))
		st.queueAlive = make([]bool, len(r.Queue))
		st.queueGone = make([]bool, len(r.Queue))
		for i, c := range r.Holders {
			st.holderAlive[i] = true
			st.held++
			st.writerHeld = st.writerHeld || c.Writer
			n := s.node(c.Session)
			n.claims = append(n.claims, claimRef{ri, false, i})
		}
		for i, c := range r.Queue {
			st.queueAlive[i] = true
			n := s.node(c.Session)
			n.claims = append(n.claims, claimRef{ri, true, i})
			n.parked = n.parked || c.Blocked
		}
	}
	// Sorted, so that the search (and so the report) does not depend on
	// map order.
	ids := make([]uint64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if n := s.sessions[id]; !n.parked {
			s.work = append(s.work, n)
		}
	}
}

// finish releases everything n holds or waits for, and hands the freed
// capacity on.
func (s *sim) finish(n *node) {
	if n.done {
		return
	}
	n.done = true
	for _, c := range n.claims {
		st := &s.res[c.res]
		switch {
		case !c.queue && st.holderAlive[c.i]:
			st.holderAlive[c.i] = false
			s.dropHolder(c.res, s.g.Resources[c.res].Holders[c.i].Writer)
		case c.queue && st.queueAlive[c.i]:
			st.queueAlive[c.i] = false
			if st.queueGone[c.i] {
				s.dropHolder(c.res, s.g.Resources[c.res].Queue[c.i].Writer)
			}
		}
	}
	for _, c := range n.claims {
		s.handOff(c.res)
	}
}

func (s *sim) dropHolder(ri int, writer bool) {
	st := &s.res[ri]
	st.held--
	if writer {
		st.writerHeld = false
	}
}

func (s *sim) fits(ri int, writer bool) bool {
	r, st := &s.g.Resources[ri], &s.res[ri]
	if !r.RW {
		return st.held < r.Limit
	}
	if writer {
		return st.held == 0
	}
	return !st.writerHeld
}

// handOff grants the queue heads that fit, as the engine does; a granted
// blocked claim resumes its session.
func (s *sim) handOff(ri int) {
	r, st := &s.g.Resources[ri], &s.res[ri]
	for st.head < len(r.Queue) {
		i := st.head
		if !st.queueAlive[i] {
			st.head++
			continue
		}
		c := r.Queue[i]
		if !s.fits(ri, c.Writer) {
			return
		}
		st.head++
		st.queueGone[i] = true
		st.held++
		st.writerHeld = st.writerHeld || c.Writer
		// A finished session's claims are dead already, so c's session
		// is live: parked, or able to act and due to release c.
		if n := s.sessions[c.Session]; c.Blocked && !n.done {
			n.parked = false
			s.work = append(s.work, n)
		}
	}
}

// edges reports whom stuck session n's blocked claims wait for: the live
// holders of each key and the others' live claims queued ahead. visit
// gets each (claim, target) pair; targets may repeat.
func (s *sim) edges(n *node, visit func(c claimRef, to *node)) {
	for _, c := range n.claims {
		r, st := &s.g.Resources[c.res], &s.res[c.res]
		if !c.queue || !st.queueAlive[c.i] || st.queueGone[c.i] || !r.Queue[c.i].Blocked {
			continue
		}
		for i, h := range r.Holders {
			if st.holderAlive[i] {
				visit(c, s.sessions[h.Session])
			}
		}
		// Claims ahead: granted since (holders now), or still queued.
		// The session's own queued claims ahead are not a wait on
		// anyone: they wait for the same holders.
		for i := 0; i < c.i; i++ {
			if st.queueAlive[i] && (st.queueGone[i] || r.Queue[i].Session != n.id) {
				visit(c, s.sessions[r.Queue[i].Session])
			}
		}
	}
}

// report finds the cycles among the stuck sessions (Tarjan's strongly
// connected components) and describes each.
func (s *sim) report() []Deadlock {
	var stuck []*node
	for _, n := range s.sessions {
		if !n.done {
			stuck = append(stuck, n)
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	slices.SortFunc(stuck, func(a, b *node) int { return cmp.Compare(a.id, b.id) })
	t := tarjan{s: s}
	for _, n := range stuck {
		if n.index < 0 {
			t.connect(n)
		}
	}
	// A component is a deadlock if it has an edge inside: two or more
	// sessions, or one that waits on itself (it holds the key it waits
	// for).
	cyclic := make(map[int]bool)
	for _, n := range stuck {
		s.edges(n, func(_ claimRef, to *node) {
			if to.scc == n.scc {
				cyclic[n.scc] = true
			}
		})
	}
	var out []Deadlock
	byComp := make(map[int]int) // component → index in out
	for _, n := range stuck {
		if !cyclic[n.scc] {
			continue
		}
		di, ok := byComp[n.scc]
		if !ok {
			di = len(out)
			byComp[n.scc] = di
			out = append(out, Deadlock{})
		}
		d := &out[di]
		d.Sessions = append(d.Sessions, n.id)
		// One Wait per key: a session's several claims on one key (an
		// HTTP session's parallel acquires) wait for the same sessions.
		waits := make(map[int][]uint64)
		var order []int
		s.edges(n, func(c claimRef, to *node) {
			if to.scc != n.scc {
				return
			}
			if _, seen := waits[c.res]; !seen {
				order = append(order, c.res)
			}
			if !slices.Contains(waits[c.res], to.id) {
				waits[c.res] = append(waits[c.res], to.id)
			}
		})
		for _, ri := range order {
			r := &s.g.Resources[ri]
			on := waits[ri]
			slices.Sort(on)
			d.Waits = append(d.Waits, Wait{Session: n.id, Key: Key{r.Key, r.Kind}, On: on})
		}
	}
	for i := range out {
		s.describe(&out[i], cyclic)
	}
	slices.SortFunc(out, func(a, b Deadlock) int { return cmp.Compare(a.Sessions[0], b.Sessions[0]) })
	return out
}

// describe fills a deadlock's keys and the stuck sessions behind it.
func (s *sim) describe(d *Deadlock, cyclic map[int]bool) {
	slices.SortFunc(d.Waits, func(a, b Wait) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Key.Key, b.Key.Key), cmp.Compare(a.Key.Kind, b.Key.Kind))
	})
	for _, w := range d.Waits {
		if !slices.Contains(d.Keys, w.Key) {
			d.Keys = append(d.Keys, w.Key)
		}
	}
	slices.SortFunc(d.Keys, func(a, b Key) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Kind, b.Kind)) })
	// Behind: stuck sessions outside cycles from which this one's
	// sessions are reachable. The graph is small (stuck sessions only),
	// so a search from each candidate is plenty.
	comp := s.sessions[d.Sessions[0]].scc
	for _, n := range s.sessions {
		if n.done || cyclic[n.scc] {
			continue
		}
		if s.reaches(n, comp) {
			d.Behind = append(d.Behind, n.id)
		}
	}
	slices.Sort(d.Behind)
}

// reaches reports whether a path of wait edges leads from n into
// component comp.
func (s *sim) reaches(from *node, comp int) bool {
	seen := map[*node]bool{from: true}
	stack := []*node{from}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		found := false
		s.edges(n, func(_ claimRef, to *node) {
			if to.scc == comp {
				found = true
			}
			if !seen[to] {
				seen[to] = true
				stack = append(stack, to)
			}
		})
		if found {
			return true
		}
	}
	return false
}

// tarjan is Tarjan's strongly connected components over the stuck
// sessions' wait edges.
type tarjan struct {
	s     *sim
	next  int
	comps int
	stack []*node
}

func (t *tarjan) connect(n *node) {
	n.index, n.low = t.next, t.next
	t.next++
	t.stack = append(t.stack, n)
	n.onStack = true
	t.s.edges(n, func(_ claimRef, to *node) {
		switch {
		case to.index < 0:
			t.connect(to)
			n.low = min(n.low, to.low)
		case to.onStack:
			n.low = min(n.low, to.index)
		}
	})
	if n.low == n.index {
		for {
			m := t.stack[len(t.stack)-1]
			t.stack = t.stack[:len(t.stack)-1]
			m.onStack = false
			m.scc = t.comps
			if m == n {
				break
			}
		}
		t.comps++
	}
}
