package timerwheel

import (
	"flag"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// modelSeeds overrides the seed count for soak runs:
// go test -run Model ./timerwheel/ -args -timerwheel.seeds=20000
var modelSeeds = flag.Int("timerwheel.seeds", 0, "seeds for TestModel (0: default)")

// TestModel drives a wheel and a reference min-heap with the same random
// operations — Add, Cancel, Reset, Advance with jumps from 0 ms to years,
// deadlines in the past, budgets, and fire callbacks that re-arm and cancel —
// and checks after every step that they agree.
func TestModel(t *testing.T) {
	seeds, steps := 200, 1500
	if raceEnabled || testing.Short() {
		seeds = 60
	}
	if *modelSeeds > 0 {
		seeds = *modelSeeds
	}
	for seed := range seeds {
		runModel(t, uint64(seed), steps)
	}
}

type model struct {
	t     *testing.T
	rng   *rand.Rand
	w     *Wheel
	nodes []Node
	items []refItem
	h     refHeap
	armed []bool
	// During Advance: nodes armed by a callback with a past deadline. They
	// must not fire in this call, so they stay out of the heap until it ends.
	deferred []int
	firing   bool
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x7133))
	starts := []Tick{0, 1<<36 - 3, -5000, Tick(rng.Int64N(1 << 40))}
	start := starts[rng.IntN(len(starts))]
	const numNodes = 48
	m := &model{
		t:     t,
		rng:   rng,
		w:     New(start),
		nodes: make([]Node, numNodes),
		items: make([]refItem, numNodes),
		armed: make([]bool, numNodes),
	}
	for i := range m.nodes {
		m.items[i] = refItem{id: i, index: -1}
	}
	for step := range steps {
		id := rng.IntN(numNodes)
		switch op := rng.IntN(10); {
		case op < 3:
			if !m.armed[id] {
				m.add(id, m.deadline())
			}
		case op < 5:
			m.reset(id, m.deadline())
		case op < 6:
			m.cancel(id)
		default:
			m.advance()
		}
		checkInvariants(t, m.w)
		m.check(seed, step)
	}
}

// deadline picks deadlines around now at every scale, on and off level edges.
func (m *model) deadline() Tick {
	now := m.w.Now()
	switch m.rng.IntN(8) {
	case 0:
		return now - Tick(m.rng.IntN(3000)) // past or now
	case 1:
		return now + Tick(m.rng.IntN(64))
	case 2:
		return now + Tick(m.rng.IntN(5000))
	case 3:
		// Just around a level (or the horizon) boundary.
		k := 1 + m.rng.IntN(numLevels+1)
		edge := Tick(1) << (k * slotBits)
		return (now | (edge - 1)) + 1 + Tick(m.rng.IntN(5)) - 2
	case 4:
		return now + Tick(m.rng.Int64N(1<<26)) // hours
	case 5:
		return now + Tick(m.rng.Int64N(1<<32)) // weeks
	case 6:
		return now + Tick(m.rng.Int64N(1<<38)) // beyond the horizon
	default:
		return now + Tick(m.rng.IntN(300_000))
	}
}

func (m *model) add(id int, d Tick) {
	m.w.Add(&m.nodes[id], d)
	m.armed[id] = true
	m.items[id].deadline = d
	if d <= m.w.Now() && m.firing {
		m.deferred = append(m.deferred, id)
		return
	}
	m.h.add(&m.items[id])
}

func (m *model) cancel(id int) {
	was := m.w.Cancel(&m.nodes[id])
	if was != m.armed[id] {
		m.t.Fatalf("Cancel(%d) = %v, model armed %v", id, was, m.armed[id])
	}
	m.forget(id)
}

func (m *model) forget(id int) {
	m.armed[id] = false
	if it := &m.items[id]; it.index >= 0 {
		m.h.remove(it)
	}
	for i, d := range m.deferred {
		if d == id {
			m.deferred = append(m.deferred[:i], m.deferred[i+1:]...)
			break
		}
	}
}

func (m *model) reset(id int, d Tick) {
	m.w.Cancel(&m.nodes[id])
	m.forget(id)
	m.add(id, d)
}

func (m *model) advance() {
	w, rng := m.w, m.rng
	before := w.Now()
	var target Tick
	switch rng.IntN(8) {
	case 0:
		target = before - Tick(rng.IntN(100)) // backwards: stays put
	case 1:
		target = before + Tick(rng.IntN(64))
	case 2:
		target = before + Tick(rng.IntN(10_000))
	case 3:
		target = before + 3_600_000*Tick(1+rng.IntN(24)) // hours
	case 4:
		target = before + 86_400_000*Tick(1+rng.IntN(60)) // days
	case 5:
		target = before + Tick(rng.Int64N(1<<38)) // years
	default:
		target = before + Tick(rng.IntN(1000))
	}
	budget := 0
	if rng.IntN(3) == 0 {
		budget = 1 + rng.IntN(4)
	}
	limit := max(target, before)
	fired := 0
	m.firing = true
	more := w.Advance(target, budget, func(n *Node) {
		id := m.idOf(n)
		it := &m.items[id]
		fired++
		switch {
		case n.Armed() || !m.armed[id] || it.index < 0:
			m.t.Fatalf("fired node %d: armed %v, model armed %v, in heap %v", id, n.Armed(), m.armed[id], it.index >= 0)
		case n.Deadline() != it.deadline:
			m.t.Fatalf("fired node %d deadline %d, model %d", id, n.Deadline(), it.deadline)
		case n.Deadline() > w.Now() || w.Now() > limit || w.Now() < before:
			m.t.Fatalf("node %d due %d fired at %d (advance %d→%d)", id, n.Deadline(), w.Now(), before, limit)
		case budget > 0 && fired > budget:
			m.t.Fatalf("fired %d with budget %d", fired, budget)
		}
		// Deadline order, except among nodes already overdue when
		// Advance began: nothing earlier may still be waiting.
		if min, _ := m.h.min(); min < n.Deadline() && n.Deadline() > before {
			e := m.h[0]
			m.t.Fatalf("fired %d while %d is armed (node %d where %d armed %v; now %d before %d limit %d budget %d fired %d)", n.Deadline(), min, e.id, m.nodes[e.id].where&^armedBit, m.nodes[e.id].Armed(), w.Now(), before, limit, budget, fired)
		}
		m.forget(id)
		// Callbacks re-arm themselves (maybe in the past), and touch
		// other nodes, as lease and waiter owners do.
		switch rng.IntN(6) {
		case 0, 1:
			m.add(id, m.deadline())
		case 2:
			m.cancel(rng.IntN(len(m.nodes)))
		case 3:
			m.reset(rng.IntN(len(m.nodes)), m.deadline())
		}
	})
	m.firing = false
	hadDeferred := len(m.deferred) > 0
	for _, id := range m.deferred {
		m.h.add(&m.items[id])
	}
	m.deferred = m.deferred[:0]

	now := w.Now()
	min, any := m.h.min()
	if now < before || now > limit {
		m.t.Fatalf("Advance %d→%d left time at %d", before, limit, now)
	}
	if !more {
		if now != limit || (any && min <= limit) || hadDeferred {
			m.t.Fatalf("Advance to %d returned no more, but now %d, earliest %d %v, deferred %v", limit, now, min, any, hadDeferred)
		}
		return
	}
	if !(budget > 0 && fired == budget) && !hadDeferred {
		m.t.Fatalf("more with budget %d, fired %d, nothing deferred", budget, fired)
	}
	if !any || min > now {
		m.t.Fatalf("more, but earliest %d %v is after now %d", min, any, now)
	}
}

// check compares Len and NextDeadline with the model.
func (m *model) check(seed uint64, step int) {
	w := m.w
	if w.Len() != m.h.Len() {
		m.t.Fatalf("seed %d step %d: Len %d, model %d", seed, step, w.Len(), m.h.Len())
	}
	next, ok := w.NextDeadline()
	min, any := m.h.min()
	if ok != any {
		m.t.Fatalf("seed %d step %d: NextDeadline ok %v, model %v", seed, step, ok, any)
	}
	if !any {
		return
	}
	now := w.Now()
	switch {
	case next > min:
		m.t.Fatalf("seed %d step %d: NextDeadline %d later than earliest %d", seed, step, next, min)
	case min > now && next <= now:
		// A driver would spin: it would wake, find nothing due, sleep 0.
		m.t.Fatalf("seed %d step %d: NextDeadline %d not after now %d, earliest %d", seed, step, next, now, min)
	case min > now && min>>slotBits == now>>slotBits && next != min:
		m.t.Fatalf("seed %d step %d: level-0 NextDeadline %d, want exact %d", seed, step, next, min)
	}
}

// idOf is the index of n in m.nodes.
func (m *model) idOf(n *Node) int {
	return int((uintptr(unsafe.Pointer(n)) - uintptr(unsafe.Pointer(&m.nodes[0]))) / unsafe.Sizeof(Node{}))
}
