package timerwheel

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedRec is a Locked with a recording notifier and fire func, for tests
// on one goroutine.
type lockedRec struct {
	l        *Locked
	notified []Tick
	fired    []*Node
	onFire   func(n *Node) // optional, after recording
}

func newLockedRec(now Tick) *lockedRec {
	r := &lockedRec{}
	r.l = NewLocked(now,
		func(d Tick) { r.notified = append(r.notified, d) },
		func(n *Node) {
			r.fired = append(r.fired, n)
			if r.onFire != nil {
				r.onFire(n)
			}
		})
	return r
}

// takeNotified returns and clears the notifications so far.
func (r *lockedRec) takeNotified() []Tick {
	got := r.notified
	r.notified = nil
	return got
}

func sameTicks(a, b []Tick) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// within runs f on another goroutine and fails if it does not return in
// time: a deadlock becomes a test failure instead of a hung run.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return: deadlock", what)
	}
}

func TestLockedArmEarliestWinsResetReplaces(t *testing.T) {
	r := newLockedRec(0)
	var n Node
	r.l.Arm(&n, 100)
	r.l.Arm(&n, 200) // later: kept at 100
	if !n.Armed() || n.Deadline() != 100 {
		t.Fatalf("after Arm 100, Arm 200: armed %v at %d, want 100", n.Armed(), n.Deadline())
	}
	r.l.Arm(&n, 100) // equal: kept
	r.l.Arm(&n, 50)  // earlier: moved
	if n.Deadline() != 50 {
		t.Fatalf("after Arm 50: deadline %d, want 50", n.Deadline())
	}
	r.l.Reset(&n, 300) // later: replaced
	if n.Deadline() != 300 {
		t.Fatalf("after Reset 300: deadline %d, want 300", n.Deadline())
	}
	r.l.Reset(&n, 30) // earlier: replaced
	if n.Deadline() != 30 || r.l.Len() != 1 {
		t.Fatalf("after Reset 30: deadline %d, Len %d, want 30 and 1", n.Deadline(), r.l.Len())
	}
	r.l.Expire(Of(29))
	if len(r.fired) != 0 {
		t.Fatal("fired before its deadline")
	}
	r.l.Expire(Of(30))
	if len(r.fired) != 1 || r.fired[0] != &n || n.Armed() {
		t.Fatalf("fired %v, armed %v; want n once, disarmed", r.fired, n.Armed())
	}
	// A fired node arms again from scratch.
	r.l.Arm(&n, 400)
	if !r.l.Armed(&n) || n.Deadline() != 400 {
		t.Fatalf("Arm after firing: armed %v at %d, want 400", n.Armed(), n.Deadline())
	}
}

func TestLockedNotifiesOnlyEarlier(t *testing.T) {
	r := newLockedRec(0)
	var a, b, c Node
	r.l.Arm(&a, 100)
	r.l.Arm(&b, 150) // later than published
	r.l.Reset(&a, 120)
	if got := r.takeNotified(); !sameTicks(got, []Tick{100}) {
		t.Fatalf("notified %v, want [100]", got)
	}
	r.l.Arm(&c, 80)
	r.l.Reset(&c, 90) // later than 80: the driver wakes early, harmlessly
	r.l.Cancel(&c)    // cancels never notify
	if got := r.takeNotified(); !sameTicks(got, []Tick{80}) {
		t.Fatalf("notified %v, want [80]", got)
	}
	// Expire publishes its answer: a node earlier than it notifies again,
	// a later one does not.
	next, ok := r.l.Expire(Of(90))
	if !ok || next > 120 {
		t.Fatalf("Expire(90) = %d %v, want a next at or before 120", next, ok)
	}
	if len(r.fired) != 0 {
		t.Fatalf("fired %d nodes at 90, want none (c was cancelled)", len(r.fired))
	}
	r.l.Arm(&c, next+1)
	if got := r.takeNotified(); len(got) != 0 {
		t.Fatalf("arming after %d notified %v, want nothing", next, got)
	}
	r.l.Reset(&c, next-1)
	if got := r.takeNotified(); !sameTicks(got, []Tick{next - 1}) {
		t.Fatalf("notified %v, want [%d]", got, next-1)
	}
	// With nothing left the driver knows nothing: any arm notifies.
	r.l.Expire(Of(1000))
	r.l.Arm(&a, 5000)
	if got := r.takeNotified(); !sameTicks(got, []Tick{5000}) {
		t.Fatalf("arming an empty Locked notified %v, want [5000]", got)
	}
	// A stopped ResetUnless notifies nothing.
	r.l.ResetUnless(&b, 10, func() bool { return true })
	if got := r.takeNotified(); len(got) != 0 || r.l.Armed(&b) {
		t.Fatalf("stopped ResetUnless notified %v, armed %v; want neither", got, r.l.Armed(&b))
	}
}

func TestLockedFiresOutsideLock(t *testing.T) {
	r := newLockedRec(0)
	var a, b, other Node
	var owner sync.Mutex // an owner's lock, taken both around Arm and in fire
	fireStarted := make(chan struct{})
	armed := make(chan struct{})
	r.onFire = func(n *Node) {
		if r.l.mu.TryLock() {
			r.l.mu.Unlock()
		} else {
			t.Error("fire called with the Locked's lock held")
		}
		if n != &a {
			return
		}
		// Another goroutine holds the owner's lock while it arms: fire
		// taking the owner's lock must not deadlock with it.
		close(fireStarted)
		<-armed
		// Arming, under the owner's lock, resetting and cancelling from
		// fire, itself included.
		owner.Lock()
		r.l.Arm(&other, 10)
		owner.Unlock()
		r.l.Reset(n, 1) // already due: fires on the next Expire
		if r.l.Cancel(&b) {
			t.Error("Cancel of a node collected in this Expire reported it armed")
		}
		r.l.Len()
		r.l.Armed(n)
	}
	r.l.Arm(&a, 1)
	r.l.Arm(&b, 1)
	go func() {
		owner.Lock()
		defer owner.Unlock()
		<-fireStarted
		close(armed)
		r.l.Arm(&other, 20)
	}()
	within(t, "Expire with a fire func that arms", func() { r.l.Expire(Of(2)) })
	if len(r.fired) != 2 {
		t.Fatalf("fired %d nodes, want a and b (b's Cancel came after it was collected)", len(r.fired))
	}
	if !r.l.Armed(&a) || a.Deadline() != 1 || !r.l.Armed(&other) || other.Deadline() != 10 {
		t.Fatal("what fire armed is not armed as asked")
	}
	if got := r.takeNotified(); len(got) == 0 || got[len(got)-1] != 1 {
		t.Fatalf("notified %v, want the re-arm at 1 last", got)
	}
	// a was re-armed in the past: it fires on the next Expire.
	r.fired = nil
	r.onFire = nil
	r.l.Expire(Of(2))
	if len(r.fired) != 1 || r.fired[0] != &a {
		t.Fatalf("next Expire fired %v, want a", r.fired)
	}
}

func TestLockedCancel(t *testing.T) {
	r := newLockedRec(0)
	var a, b Node
	if r.l.Cancel(&a) {
		t.Fatal("Cancel of a node never armed reported it armed")
	}
	r.l.Arm(&a, 10)
	r.l.Arm(&b, 10)
	if !r.l.Cancel(&a) || r.l.Cancel(&a) {
		t.Fatal("Cancel of an armed node: want true once, then false")
	}
	r.l.Expire(Of(10))
	if len(r.fired) != 1 || r.fired[0] != &b {
		t.Fatalf("fired %v, want only b", r.fired)
	}
	// Cancel of a fired node changes nothing: neither it nor others.
	var c Node
	r.l.Arm(&c, 20)
	if r.l.Cancel(&b) || b.Deadline() != 10 || r.l.Len() != 1 || !r.l.Armed(&c) {
		t.Fatal("Cancel of a fired node was not a no-op")
	}
}

func TestLockedResetUnless(t *testing.T) {
	r := newLockedRec(0)
	var n Node
	stopped := false
	stop := func() bool {
		if r.l.mu.TryLock() {
			r.l.mu.Unlock()
			t.Error("stop called without the Locked's lock")
		}
		return stopped
	}
	r.l.ResetUnless(&n, 100, stop)
	r.l.ResetUnless(&n, 200, stop) // replaces, unlike Arm
	if !r.l.Armed(&n) || n.Deadline() != 200 {
		t.Fatalf("ResetUnless with stop false: armed %v at %d, want 200", n.Armed(), n.Deadline())
	}
	stopped = true
	r.takeNotified()
	r.l.ResetUnless(&n, 50, stop)
	if n.Deadline() != 200 || len(r.notified) != 0 {
		t.Fatal("ResetUnless with stop true changed the node or notified")
	}
	r.l.Cancel(&n)
	r.l.ResetUnless(&n, 50, stop)
	if r.l.Armed(&n) || r.l.Len() != 0 {
		t.Fatal("ResetUnless with stop true armed a cancelled node")
	}
}

func TestLockedDueReuse(t *testing.T) {
	r := newLockedRec(0)
	nodes := make([]Node, 2*keepDue)
	expire := func(k int, at Tick) {
		t.Helper()
		r.fired = nil
		for i := range nodes[:k] {
			r.l.Arm(&nodes[i], at)
		}
		r.l.Expire(Of(at))
		if len(r.fired) != k {
			t.Fatalf("fired %d, want %d", len(r.fired), k)
		}
		for _, n := range r.l.due[:cap(r.l.due)] {
			if n != nil {
				t.Fatal("the kept due list still points at a fired node")
			}
		}
	}
	expire(10, 1)
	kept := cap(r.l.due)
	if kept < 10 {
		t.Fatalf("due list of cap %d kept after 10 fired, want it reused", kept)
	}
	expire(5, 2)
	if cap(r.l.due) != kept {
		t.Fatalf("due list reallocated (cap %d → %d) for fewer nodes", kept, cap(r.l.due))
	}
	expire(len(nodes), 3)
	if cap(r.l.due) != 0 {
		t.Fatalf("due list of cap %d kept after a mass expiry, want at most %d", cap(r.l.due), keepDue)
	}
}

// TestLockedModel runs random operations against a map of armed deadlines
// and checks, after each, what fired and that the driver always knows a
// deadline at or before the earliest armed one, having been notified only
// when that moved earlier.
func TestLockedModel(t *testing.T) {
	steps := 200_000
	if raceEnabled || testing.Short() {
		steps = 20_000
	}
	rng := rand.New(rand.NewPCG(7, 11))
	const numNodes = 64
	var nodes [numNodes]Node
	index := func(n *Node) int {
		for i := range nodes {
			if &nodes[i] == n {
				return i
			}
		}
		panic("not a test node")
	}
	model := map[int]Tick{} // armed node → deadline
	now := Tick(1000)
	known := Tick(never) // the earliest deadline the driver knows of
	var l *Locked
	var refire bool
	var fired []int
	l = NewLocked(now,
		func(d Tick) {
			if d >= known {
				t.Fatalf("notified %d, but the driver already knows %d", d, known)
			}
			known = d
		},
		func(n *Node) {
			i := index(n)
			fired = append(fired, i)
			if refire && rng.IntN(3) == 0 {
				d := now + Tick(rng.IntN(200)) - 20 // maybe already due
				l.Reset(n, d)
				model[i] = d
			}
		})
	deadline := func() Tick {
		switch rng.IntN(4) {
		case 0:
			return now - Tick(rng.IntN(10)) // past
		case 1:
			return now + Tick(rng.IntN(64))
		case 2:
			return now + Tick(rng.IntN(5000))
		default:
			return now + Tick(rng.IntN(1<<24)) // coarse levels
		}
	}
	for step := range steps {
		i := rng.IntN(numNodes)
		n := &nodes[i]
		cur, armed := model[i]
		switch op := rng.IntN(10); op {
		case 0, 1:
			d := deadline()
			l.Arm(n, d)
			if !armed || d < cur {
				model[i] = d
			}
		case 2, 3:
			d := deadline()
			l.Reset(n, d)
			model[i] = d
		case 4:
			d := deadline()
			stop := rng.IntN(2) == 0
			l.ResetUnless(n, d, func() bool { return stop })
			if !stop {
				model[i] = d
			}
		case 5, 6:
			if got := l.Cancel(n); got != armed {
				t.Fatalf("step %d: Cancel = %v, model armed %v", step, got, armed)
			}
			delete(model, i)
		case 7:
			if got := l.Armed(n); got != armed {
				t.Fatalf("step %d: Armed = %v, model %v", step, got, armed)
			}
		default:
			switch rng.IntN(3) {
			case 0:
				now += Tick(rng.IntN(4))
			case 1:
				now += Tick(rng.IntN(500))
			default:
				now += Tick(rng.IntN(1 << 20))
			}
			want := map[int]bool{}
			for j, d := range model {
				if d <= now {
					want[j] = true
					delete(model, j)
				}
			}
			fired = fired[:0]
			refire = rng.IntN(2) == 0
			// As the driver does: forget what was published, then
			// merge Expire's answer with what fire notified.
			known = never
			next, ok := l.Expire(Of(now))
			if ok && next < known {
				known = next
			}
			if len(fired) != len(want) {
				t.Fatalf("step %d: Expire(%d) fired %d nodes, want %d", step, now, len(fired), len(want))
			}
			for _, j := range fired {
				if !want[j] {
					t.Fatalf("step %d: Expire(%d) fired node %d (deadline %d) not due", step, now, j, nodes[j].Deadline())
				}
				delete(want, j)
			}
		}
		if l.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, l.Len(), len(model))
		}
		for j, d := range model {
			if d < known {
				t.Fatalf("step %d: node %d armed for %d, but the driver sleeps until %d", step, j, d, known)
			}
			if nodes[j].Deadline() != d {
				t.Fatalf("step %d: node %d at %d, model %d", step, j, nodes[j].Deadline(), d)
			}
		}
	}
}

// TestLockedConcurrent arms, resets and cancels shared nodes from many
// goroutines while a driver expires them (run it with -race), then checks
// that the driver still knows a deadline at or before every armed one and
// that one run at a later time fires them all.
func TestLockedConcurrent(t *testing.T) {
	iters := 20_000
	if raceEnabled || testing.Short() {
		iters = 2_000
	}
	clock := NewFakeClock(0)
	var (
		d      *Driver
		l      *Locked
		fired  atomic.Int64
		quiet  atomic.Bool
		nodes  [128]Node
		closed [len(nodes)]atomic.Bool // ResetUnless's stop, per node
	)
	l = NewLocked(0, func(dl Tick) { d.Notify(0, dl) }, func(n *Node) {
		fired.Add(1)
		if n.Kind == 1 && !quiet.Load() {
			l.Arm(n, clock.Now().Tick()+5) // fire that arms again
		}
	})
	d = NewDriver(clock, []Target{l})
	for i := range nodes {
		nodes[i].Kind = uint8(i % 2)
	}

	stop := make(chan struct{})
	driverDone := make(chan struct{})
	go func() {
		defer close(driverDone)
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Add(Tick(1 + rng.IntN(20)))
			d.RunOnce(clock.Now())
		}
	}()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			for range iters {
				i := rng.IntN(len(nodes))
				n := &nodes[i]
				dl := clock.Now().Tick() + Tick(rng.IntN(200))
				switch rng.IntN(6) {
				case 0, 1:
					l.Arm(n, dl)
				case 2:
					l.Reset(n, dl)
				case 3:
					l.ResetUnless(n, dl, closed[i].Load)
				case 4:
					closed[i].Store(rng.IntN(2) == 0)
					l.Cancel(n)
				default:
					l.Armed(n)
					l.Len()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-driverDone
	quiet.Store(true)

	earliest, last := Tick(never), Tick(0)
	l.mu.Lock()
	for i := range nodes {
		if nodes[i].Armed() {
			earliest = min(earliest, nodes[i].deadline)
			last = max(last, nodes[i].deadline)
		}
	}
	armed := l.mu.wheel.Len()
	l.mu.Unlock()
	if known := Tick(d.published[0].v.Load()); known > earliest {
		t.Fatalf("driver sleeps until %d, but a node is armed for %d", known, earliest)
	}
	before := fired.Load()
	d.RunOnce(Of(max(last, clock.Now().Tick())))
	if l.Len() != 0 || fired.Load()-before != int64(armed) {
		t.Fatalf("after a run past every deadline: %d armed, %d of %d fired", l.Len(), fired.Load()-before, armed)
	}
	if fired.Load() == 0 {
		t.Fatal("nothing fired while the goroutines ran")
	}
}

// TestLockedZeroAllocs pins Locked's arming and expiring at zero
// allocations: the loops arm a read deadline per read batch.
func TestLockedZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clock := NewFakeClock(0)
	var d *Driver
	var l *Locked
	refire := func(n *Node) { l.Arm(n, clock.Now().Tick()+100) }
	l = NewLocked(0, func(dl Tick) { d.Notify(0, dl) }, refire)
	d = NewDriver(clock, []Target{l})
	nodes := make([]Node, 256)
	for i := range nodes {
		l.Arm(&nodes[i], Tick(1+i))
	}
	keep := func() bool { return false }
	var n Node
	i := 0
	cases := []struct {
		name string
		f    func()
	}{
		{"Arm+Cancel", func() {
			i++
			l.Arm(&n, clock.Now().Tick()+Tick(i%5000))
			l.Cancel(&n)
		}},
		{"Arm/kept", func() {
			l.Arm(&n, 1)
			l.Arm(&n, 2)
		}},
		{"Reset", func() {
			i++
			l.Reset(&nodes[i%len(nodes)], clock.Now().Tick()+1+Tick(i*7919%100_000))
		}},
		{"ResetUnless", func() {
			i++
			l.ResetUnless(&nodes[i%len(nodes)], clock.Now().Tick()+1+Tick(i%300), keep)
		}},
		{"Armed+Len", func() { l.Armed(&n); l.Len() }},
		{"Expire", func() {
			clock.Add(10)
			d.RunOnce(clock.Now())
		}},
	}
	for _, c := range cases {
		if a := testing.AllocsPerRun(1000, c.f); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", c.name, a)
		}
	}
}

func BenchmarkLocked(b *testing.B) {
	clock := NewFakeClock(0)
	var d *Driver
	l := NewLocked(0, func(dl Tick) { d.Notify(0, dl) }, func(*Node) {})
	d = NewDriver(clock, []Target{l})
	for _, bc := range []struct {
		name string
		set  func(n *Node, deadline Tick)
	}{
		{"Arm", l.Arm}, // earliest wins: mostly kept
		{"Reset", l.Reset},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var n Node
				dl := Tick(1000)
				for pb.Next() {
					dl++
					bc.set(&n, dl)
				}
				l.Cancel(&n)
			})
		})
	}
}
