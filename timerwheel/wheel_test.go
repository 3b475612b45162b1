package timerwheel

import (
	"math"
	"math/bits"
	"strings"
	"testing"
)

// checkInvariants walks every list of w and fails t if the links, labels,
// occupancy bits, count, bounds or the placement invariant are wrong.
func checkInvariants(t testing.TB, w *Wheel) {
	count := 0
	for idx := 0; idx < numLists; idx++ {
		var prev *Node
		for n := w.heads[idx]; n != nil; n = n.next {
			count++
			if !n.Armed() || int(n.where&^armedBit) != idx || n.prev != prev {
				t.Fatalf("list %d: node armed=%v where=%d prev ok=%v", idx, n.Armed(), n.where&^armedBit, n.prev == prev)
			}
			d := n.deadline
			switch {
			case idx < listDue:
				level, slot := idx/numSlots, idx%numSlots
				if d <= w.now {
					t.Fatalf("level %d slot %d holds past deadline %d (now %d)", level, slot, d, w.now)
				}
				want := (bits.Len64(uint64(d^w.now)) - 1) / slotBits
				if want != level || int(uint64(d)>>(level*slotBits))&slotMask != slot {
					t.Fatalf("deadline %d at level %d slot %d, now %d wants level %d", d, level, slot, w.now, want)
				}
			case idx == listDue:
				if d > w.now || d < w.pastMin {
					t.Fatalf("due deadline %d: now %d pastMin %d", d, w.now, w.pastMin)
				}
			case idx == listDeferred:
				t.Fatalf("deferred list not empty outside Advance")
			case idx == listOverflow:
				if d <= w.now || uint64(d^w.now)>>horizonBits == 0 || d < w.overMin {
					t.Fatalf("overflow deadline %d: now %d overMin %d", d, w.now, w.overMin)
				}
			}
			prev = n
		}
		if idx < listDue {
			bit := w.occupied[idx/numSlots]>>(idx%numSlots)&1 == 1
			if bit != (w.heads[idx] != nil) {
				t.Fatalf("list %d: occupancy bit %v, head %v", idx, bit, w.heads[idx] != nil)
			}
		}
	}
	if w.heads[listOverflow] != nil && (w.overMin <= w.now || uint64(w.overMin^w.now)>>horizonBits == 0) {
		t.Fatalf("overMin %d not in a later top-level block than now %d", w.overMin, w.now)
	}
	if count != w.count {
		t.Fatalf("Len %d, lists hold %d", w.count, count)
	}
}

// collect advances w to now and returns the deadlines fired, checking that
// none fired early.
func collect(t *testing.T, w *Wheel, now Tick, budget int) ([]Tick, bool) {
	t.Helper()
	var got []Tick
	target := max(now, w.Now())
	more := w.Advance(now, budget, func(n *Node) {
		if n.Armed() {
			t.Fatalf("node armed inside fire")
		}
		if n.Deadline() > w.Now() || w.Now() > target {
			t.Fatalf("fired deadline %d at wheel time %d (target %d)", n.Deadline(), w.Now(), target)
		}
		got = append(got, n.Deadline())
	})
	checkInvariants(t, w)
	return got, more
}

// TestLevelEdges puts timers on both sides of every level boundary and of the
// overflow horizon, from several starting times, and checks each fires at its
// exact millisecond when time is walked with NextDeadline, and when jumped.
func TestLevelEdges(t *testing.T) {
	starts := []Tick{0, 1, 63, 64, 4095, 1<<30 - 1, 1<<36 - 1, 1 << 36, -1, -4097, 123456789}
	for _, start := range starts {
		for k := 1; k <= numLevels+1; k++ {
			edge := Tick(1) << (k * slotBits)
			// Deadlines around the edge, measured both from the start
			// and as absolute block boundaries after it.
			abs := (start | (edge - 1)) + 1
			var deadlines []Tick
			for _, base := range []Tick{start + edge, abs} {
				for _, d := range []Tick{base - 2, base - 1, base, base + 1} {
					if d > start { // past deadlines have their own test
						deadlines = append(deadlines, d)
					}
				}
			}
			w := New(start)
			nodes := make([]Node, len(deadlines))
			for i, d := range deadlines {
				w.Add(&nodes[i], d)
			}
			checkInvariants(t, w)
			// Walk like a driver: sleep to NextDeadline, advance.
			fired := 0
			for w.Len() > 0 {
				next, ok := w.NextDeadline()
				if !ok {
					t.Fatalf("NextDeadline !ok with %d armed", w.Len())
				}
				got, _ := collect(t, w, next, 0)
				for _, d := range got {
					if d != next {
						t.Fatalf("start %d edge 64^%d: fired %d when advancing to %d", start, k, d, next)
					}
				}
				fired += len(got)
			}
			if fired != len(deadlines) {
				t.Fatalf("fired %d of %d", fired, len(deadlines))
			}

			// Jump: advance to each deadline-1 then deadline directly.
			w = New(start)
			for i, d := range deadlines {
				w.Add(&nodes[i], d)
			}
			seen := map[Tick]int{}
			for _, d := range deadlines {
				seen[d]++
			}
			for _, d := range sortedUnique(deadlines) {
				if got, _ := collect(t, w, d-1, 0); len(got) != 0 {
					t.Fatalf("early fire: %v before %d", got, d)
				}
				got, _ := collect(t, w, d, 0)
				n := 0
				for _, g := range got {
					if g == d {
						n++
					}
				}
				if n != seen[d] {
					t.Fatalf("start %d edge 64^%d: at %d fired %v, want %d×%d", start, k, d, got, seen[d], d)
				}
			}
		}
	}
}

func sortedUnique(ts []Tick) []Tick {
	out := append([]Tick(nil), ts...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	u := out[:0]
	for i, v := range out {
		if i == 0 || v != out[i-1] {
			u = append(u, v)
		}
	}
	return u
}

func TestOverflowHorizon(t *testing.T) {
	const horizon = Tick(1) << horizonBits
	for _, d := range []Tick{horizon - 1, horizon, horizon + 1, 3*horizon + 17, 1 << 50, math.MaxInt64 - 1, math.MaxInt64} {
		w := New(0)
		var n Node
		w.Add(&n, d)
		checkInvariants(t, w)
		if next, ok := w.NextDeadline(); !ok || next > d {
			t.Fatalf("deadline %d: NextDeadline %d %v", d, next, ok)
		}
		if got, _ := collect(t, w, d-1, 0); len(got) != 0 {
			t.Fatalf("deadline %d fired early at %d", d, d-1)
		}
		if next, ok := w.NextDeadline(); !ok || next != d {
			t.Fatalf("deadline %d: after reaching %d NextDeadline = %d %v", d, d-1, next, ok)
		}
		if got, _ := collect(t, w, d, 0); len(got) != 1 {
			t.Fatalf("deadline %d did not fire at %d", d, d)
		}
	}
	// Walking an overflow timer with NextDeadline must make progress and
	// wake a bounded number of times.
	w := New(5)
	var n Node
	w.Add(&n, 1<<50+12345)
	wakes := 0
	for w.Len() > 0 {
		next, _ := w.NextDeadline()
		if next <= w.Now() {
			t.Fatalf("NextDeadline %d not after Now %d", next, w.Now())
		}
		collect(t, w, next, 0)
		if wakes++; wakes > 2*numLevels+2 {
			t.Fatalf("more than %d wakes to reach an overflow timer", wakes)
		}
	}
}

func TestPastDeadlinesAndBackwards(t *testing.T) {
	w := New(1000)
	var a, b Node
	w.Add(&a, 10)
	w.Add(&b, 1000)
	if next, ok := w.NextDeadline(); !ok || next > 10 {
		t.Fatalf("NextDeadline = %d %v, want <= 10", next, ok)
	}
	// Advancing "backwards" keeps the time and still fires what is due.
	got, more := collect(t, w, 5, 0)
	if len(got) != 2 || more || w.Now() != 1000 {
		t.Fatalf("got %v more %v now %d", got, more, w.Now())
	}
	if _, ok := w.NextDeadline(); ok {
		t.Fatalf("NextDeadline ok on empty wheel")
	}
}

func TestBudget(t *testing.T) {
	w := New(0)
	nodes := make([]Node, 10)
	for i := range nodes {
		w.Add(&nodes[i], Tick(100+i/4)) // 4 at 100, 4 at 101, 2 at 102
	}
	var all []Tick
	calls := 0
	for {
		got, more := collect(t, w, 1000, 3)
		calls++
		if len(got) > 3 {
			t.Fatalf("budget 3 fired %d", len(got))
		}
		if more && len(got) != 3 {
			t.Fatalf("more with budget left: %v", got)
		}
		if more && (w.Now() < 100 || w.Now() > 102) {
			t.Fatalf("stopped at %d", w.Now())
		}
		all = append(all, got...)
		if !more {
			break
		}
	}
	if len(all) != 10 || calls != 4 || w.Now() != 1000 {
		t.Fatalf("fired %v in %d calls, now %d", all, calls, w.Now())
	}
	for i := 1; i < len(all); i++ {
		if all[i] < all[i-1] {
			t.Fatalf("out of order: %v", all)
		}
	}
	// Budget exactly spent on the last due node: nothing remains.
	w.Add(&nodes[0], 1001)
	if got, more := collect(t, w, 2000, 1); len(got) != 1 || more {
		t.Fatalf("got %v more %v", got, more)
	}
}

func TestFireReArms(t *testing.T) {
	w := New(0)
	var periodic, past Node
	w.Add(&periodic, 10)
	count := 0
	more := w.Advance(1000, 0, func(n *Node) {
		count++
		if n.Deadline() != w.Now() {
			t.Fatalf("periodic fired at %d for %d", w.Now(), n.Deadline())
		}
		w.Add(n, w.Now()+10)
	})
	if count != 100 || more || !periodic.Armed() || periodic.Deadline() != 1010 {
		t.Fatalf("count %d more %v deadline %d", count, more, periodic.Deadline())
	}
	checkInvariants(t, w)
	w.Cancel(&periodic)

	// Re-arming in the past defers to the next call instead of looping.
	w.Add(&past, 1000)
	fires := 0
	for i := 0; i < 3; i++ {
		more = w.Advance(1000, 0, func(n *Node) {
			fires++
			w.Reset(n, 0)
			if next, ok := w.NextDeadline(); !ok || next > 0 {
				t.Fatalf("NextDeadline inside fire = %d %v", next, ok)
			}
		})
		if fires != i+1 || !more {
			t.Fatalf("call %d: fires %d more %v", i, fires, more)
		}
		checkInvariants(t, w)
	}

	// A callback may cancel a node due in the same millisecond.
	w = New(0)
	var x, y Node
	w.Add(&x, 5)
	w.Add(&y, 5)
	got := 0
	w.Advance(5, 0, func(n *Node) {
		got++
		w.Cancel(&x)
		w.Cancel(&y)
	})
	if got != 1 || w.Len() != 0 {
		t.Fatalf("fired %d, len %d", got, w.Len())
	}
	checkInvariants(t, w)
}

func TestMisuse(t *testing.T) {
	w := New(0)
	var n Node
	if w.Cancel(&n) {
		t.Fatal("Cancel of zero Node returned true")
	}
	w.Add(&n, 5)
	mustPanic(t, "armed", func() { w.Add(&n, 6) })
	mustPanic(t, "fire callback", func() {
		w.Advance(10, 0, func(*Node) { w.Advance(10, 0, nil) })
	})
	// The wheel stays usable after a callback panicked.
	w.Add(&n, 20)
	if got, _ := collect(t, w, 20, 0); len(got) != 1 {
		t.Fatalf("after panic: fired %v", got)
	}
	if w.Cancel(new(Node)) || w.Cancel(&n) {
		t.Fatal("Cancel of fired Node returned true")
	}
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		s, _ := r.(string)
		if !strings.Contains(s, want) {
			t.Fatalf("panic %v, want one mentioning %q", r, want)
		}
	}()
	f()
}

// TestLongJumps spreads timers over years and jumps by days: every timer
// fires in the right jump, and jumping is not a per-millisecond loop (the
// test would take hours otherwise).
func TestLongJumps(t *testing.T) {
	const day = Tick(24 * 3600 * 1000)
	w := New(0)
	nodes := make([]Node, 3000)
	for i := range nodes {
		w.Add(&nodes[i], Tick(i)*day/3+Tick(i%7)) // ~1000 days
	}
	for now := Tick(0); w.Len() > 0; now += day {
		got, _ := collect(t, w, now, 0)
		for _, d := range got {
			if d <= now-day {
				t.Fatalf("deadline %d fired late at %d", d, now)
			}
		}
	}
}

func TestReset(t *testing.T) {
	w := New(0)
	var n Node
	w.Reset(&n, 100) // unarmed: same as Add
	w.Reset(&n, 50)
	w.Reset(&n, 5000)
	if w.Len() != 1 || n.Deadline() != 5000 {
		t.Fatalf("len %d deadline %d", w.Len(), n.Deadline())
	}
	if got, _ := collect(t, w, 4999, 0); len(got) != 0 {
		t.Fatalf("fired early: %v", got)
	}
	if got, _ := collect(t, w, 5000, 0); len(got) != 1 {
		t.Fatalf("not fired at 5000")
	}
}
