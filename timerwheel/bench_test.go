package timerwheel

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

// The benchmarks compare the wheel with a container/heap timer queue at 10^6
// live timers, deadlines spread uniformly over a minute (lease- and
// timeout-sized), under the same operation sequences:
//
//	Add+Cancel    arm one more timer and cancel it (a grant cancelling a timeout)
//	Reset         move a random live timer to a new deadline (a lease renewal)
//	Advance/1ms   advance one millisecond; each expired timer is re-armed for
//	              a fresh uniform delay, so the live count stays put and about
//	              live/30 s ≈ 33 timers expire per op (reported as fires/op)
//	Advance/fire  one op per expiry, same steady state
const (
	benchLive   = 1_000_000
	benchSpread = 60_000 // ms
	benchRandN  = 1 << 20
)

// benchRand holds pre-drawn random deltas and indexes so the measured loop
// does not time the generator.
type benchRand struct {
	delta []Tick
	index []int
}

func newBenchRand() *benchRand {
	rng := rand.New(rand.NewPCG(1, 2))
	r := &benchRand{delta: make([]Tick, benchRandN), index: make([]int, benchRandN)}
	for i := range r.delta {
		r.delta[i] = 1 + Tick(rng.IntN(benchSpread))
		r.index[i] = rng.IntN(benchLive)
	}
	return r
}

func (r *benchRand) d(i int) Tick { return r.delta[i&(benchRandN-1)] }
func (r *benchRand) i(i int) int  { return r.index[i&(benchRandN-1)] }

func newBenchWheel(r *benchRand) (*Wheel, []Node) {
	w := New(0)
	nodes := make([]Node, benchLive)
	for i := range nodes {
		w.Add(&nodes[i], r.d(i*7+3))
	}
	return w, nodes
}

func BenchmarkWheel(b *testing.B) {
	r := newBenchRand()
	b.Run("Add+Cancel/live=1e6", func(b *testing.B) {
		w, _ := newBenchWheel(r)
		var extra Node
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			w.Add(&extra, r.d(i))
			w.Cancel(&extra)
		}
	})
	b.Run("Reset/live=1e6", func(b *testing.B) {
		w, nodes := newBenchWheel(r)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			w.Reset(&nodes[r.i(i)], r.d(i))
		}
	})
	b.Run("Advance/1ms/live=1e6", func(b *testing.B) {
		w, _ := newBenchWheel(r)
		k, fired := 0, 0
		refire := func(n *Node) {
			k++
			fired++
			w.Add(n, w.Now()+r.d(k))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			w.Advance(Tick(i+1), 0, refire)
		}
		b.ReportMetric(float64(fired)/float64(b.N), "fires/op")
	})
	b.Run("Advance/fire/live=1e6", func(b *testing.B) {
		w, _ := newBenchWheel(r)
		k := 0
		refire := func(n *Node) {
			k++
			w.Add(n, w.Now()+r.d(k))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for now := Tick(1); k < b.N; now++ {
			w.Advance(now, 0, refire)
		}
	})
}

func newBenchHeap(r *benchRand) (*refHeap, []refItem) {
	items := make([]refItem, benchLive)
	h := make(refHeap, benchLive, benchLive+1) // room for Add+Cancel's extra item
	for i := range items {
		items[i] = refItem{deadline: r.d(i*7 + 3), id: i, index: i}
		h[i] = &items[i]
	}
	heap.Init(&h)
	return &h, items
}

// heapAdvance pops every item due at now, as a heap timer loop would, and
// re-arms it in place (Fix at the root instead of Pop and Push).
func heapAdvance(h *refHeap, now Tick, refire func(*refItem)) {
	for len(*h) > 0 && (*h)[0].deadline <= now {
		refire((*h)[0])
	}
}

func BenchmarkHeap(b *testing.B) {
	r := newBenchRand()
	b.Run("Add+Cancel/live=1e6", func(b *testing.B) {
		h, _ := newBenchHeap(r)
		extra := &refItem{index: -1}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			extra.deadline = r.d(i)
			h.add(extra)
			h.remove(extra)
		}
	})
	b.Run("Reset/live=1e6", func(b *testing.B) {
		h, items := newBenchHeap(r)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			h.reset(&items[r.i(i)], r.d(i))
		}
	})
	b.Run("Advance/1ms/live=1e6", func(b *testing.B) {
		h, _ := newBenchHeap(r)
		k, fired := 0, 0
		var now Tick
		refire := func(it *refItem) {
			k++
			fired++
			h.reset(it, now+r.d(k))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			now = Tick(i + 1)
			heapAdvance(h, now, refire)
		}
		b.ReportMetric(float64(fired)/float64(b.N), "fires/op")
	})
	b.Run("Advance/fire/live=1e6", func(b *testing.B) {
		h, _ := newBenchHeap(r)
		k := 0
		var now Tick
		refire := func(it *refItem) {
			k++
			h.reset(it, now+r.d(k))
		}
		b.ReportAllocs()
		b.ResetTimer()
		for now = 1; k < b.N; now++ {
			heapAdvance(h, now, refire)
		}
	})
}

// BenchmarkWheelJump measures skipping idle time: 1000 timers a day apart,
// advanced a day at a time, so nearly all the work is finding the next
// occupied slot across levels rather than ticking.
func BenchmarkWheelJump(b *testing.B) {
	const day = Tick(86_400_000)
	w := New(0)
	nodes := make([]Node, 1000)
	for i := range nodes {
		w.Add(&nodes[i], Tick(i+1)*day)
	}
	refire := func(n *Node) { w.Add(n, n.Deadline()+Tick(len(nodes))*day) }
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w.Advance(Tick(i+1)*day, 0, refire)
	}
}
