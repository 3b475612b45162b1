package deadlock

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func lock(key string, holders []Claim, queue ...Claim) Resource {
	return Resource{Key: key, Kind: "lock", Limit: 1, Holders: holders, Queue: queue}
}

func held(s uint64) []Claim     { return []Claim{{Session: s}} }
func parked(s uint64) Claim     { return Claim{Session: s, Blocked: true} }
func hold(ss ...uint64) []Claim { return claims(false, ss...) }
func claims(blocked bool, ss ...uint64) []Claim {
	var out []Claim
	for _, s := range ss {
		out = append(out, Claim{Session: s, Blocked: blocked})
	}
	return out
}

// The textbook case: 1 holds a and waits for b, 2 holds b and waits for a.
func TestTwoSessionsCrossed(t *testing.T) {
	g := &Graph{Resources: []Resource{
		lock("a", held(1), parked(2)),
		lock("b", held(2), parked(1)),
	}}
	got := Find(g)
	want := []Deadlock{{
		Sessions: []uint64{1, 2},
		Keys:     []Key{{"a", "lock"}, {"b", "lock"}},
		Waits:    []Wait{{1, Key{"b", "lock"}, []uint64{2}}, {2, Key{"a", "lock"}, []uint64{1}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// A waiter behind a cycle is reported behind it, not as a deadlock of
// its own; a waiter behind a session that can act is not reported.
func TestBehindAndFree(t *testing.T) {
	g := &Graph{Resources: []Resource{
		lock("a", held(1), parked(2), parked(3)), // 3 queues behind 2 on a
		lock("b", held(2), parked(1)),
		lock("c", held(4), parked(5)), // 4 is not parked: it will release c
	}}
	got := Find(g)
	if len(got) != 1 || !slices.Equal(got[0].Sessions, []uint64{1, 2}) || !slices.Equal(got[0].Behind, []uint64{3}) {
		t.Fatalf("got %+v", got)
	}
}

// A semaphore waiter is not deadlocked while one holder can still act,
// even if another holder waits on it.
func TestSemaphoreWithAFreeHolder(t *testing.T) {
	g := &Graph{Resources: []Resource{
		{Key: "s", Kind: "semaphore", Limit: 2, Holders: hold(1, 3), Queue: []Claim{parked(2)}},
		lock("b", held(2), parked(1)),
	}}
	if got := Find(g); got != nil {
		t.Fatalf("got %+v, want none: 3 releases s, 2 gets it and releases b", got)
	}
	// Once 3 waits on 2 as well, nobody can act.
	g.Resources = append(g.Resources, lock("c", held(2), parked(3)))
	got := Find(g)
	if len(got) != 1 || !slices.Equal(got[0].Sessions, []uint64{1, 2, 3}) {
		t.Fatalf("got %+v", got)
	}
}

// A reader queued behind a waiting writer waits for the writer (no
// barging), and the writer for the reader holding: a cycle through the
// queue, not only through holders.
func TestReaderBehindWriter(t *testing.T) {
	g := &Graph{Resources: []Resource{
		{Key: "rw", Kind: "rwlock", RW: true, Holders: hold(1), Queue: []Claim{{Session: 2, Writer: true, Blocked: true}, parked(3)}},
		lock("x", held(3), parked(1)),
	}}
	got := Find(g)
	if len(got) != 1 || !slices.Equal(got[0].Sessions, []uint64{1, 2, 3}) {
		t.Fatalf("got %+v", got)
	}
	w := got[0].Waits
	if len(w) != 3 || !slices.Equal(w[2].On, []uint64{1, 2}) {
		t.Fatalf("3 must wait on the holder 1 and the writer 2 ahead: %+v", w)
	}
}

// A session waiting for a lock it holds waits for itself.
func TestSelfDeadlock(t *testing.T) {
	got := Find(&Graph{Resources: []Resource{lock("a", held(7), parked(7))}})
	if len(got) != 1 || !slices.Equal(got[0].Sessions, []uint64{7}) {
		t.Fatalf("got %+v", got)
	}
	// Two parked claims of one session behind a free holder are no
	// deadlock: the holder releases, and the first is granted.
	if got := Find(&Graph{Resources: []Resource{lock("a", held(1), parked(7), parked(7))}}); got != nil {
		t.Fatalf("got %+v", got)
	}
}

// An enqueue (queued, not blocked) ahead of a parked waiter is granted
// to its session, which can act, so it does not hold the waiter up.
func TestEnqueuedAheadIsNoWait(t *testing.T) {
	g := &Graph{Resources: []Resource{lock("a", held(1), Claim{Session: 2}, parked(1))}}
	if got := Find(g); len(got) != 1 {
		// 1 holds a and waits behind itself: a self-deadlock whatever 2 does.
		t.Fatalf("got %+v", got)
	}
	g = &Graph{Resources: []Resource{lock("a", held(3), Claim{Session: 2}, parked(1))}}
	if got := Find(g); got != nil {
		t.Fatalf("got %+v", got)
	}
}

// Find against a model: the same semantics computed the slow, obvious
// way (rescan everything until nothing changes; reachability by
// Floyd–Warshall), over random wait-for graphs.
func TestFindAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	found := 0
	for i := range 20000 {
		g := randomGraph(rng)
		got, want := Find(g), model(g)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("graph %d: %s\nFind:  %+v\nmodel: %+v", i, dump(g), got, want)
		}
		found += len(got)
	}
	// The generator must produce deadlocks, or the comparison is empty.
	if found < 1000 {
		t.Fatalf("only %d deadlocks in 20000 graphs", found)
	}
}

func randomGraph(rng *rand.Rand) *Graph {
	nS := uint64(1 + rng.IntN(6))
	sess := func() uint64 { return 1 + rng.Uint64N(nS) }
	g := &Graph{}
	for ri := range 1 + rng.IntN(5) {
		r := Resource{Key: fmt.Sprintf("k%d", ri)}
		switch rng.IntN(3) {
		case 0:
			r.Kind, r.Limit = "lock", 1
		case 1:
			r.Kind, r.Limit = "semaphore", 1+rng.IntN(3)
		default:
			r.Kind, r.RW = "rwlock", true
		}
		switch {
		case r.RW && rng.IntN(2) == 0:
			r.Holders = []Claim{{Session: sess(), Writer: true}}
		case r.RW:
			for range rng.IntN(3) {
				r.Holders = append(r.Holders, Claim{Session: sess()})
			}
		default:
			for range rng.IntN(r.Limit + 1) {
				r.Holders = append(r.Holders, Claim{Session: sess()})
			}
		}
		for range rng.IntN(5) {
			r.Queue = append(r.Queue, Claim{Session: sess(), Writer: r.RW && rng.IntN(2) == 0, Blocked: rng.IntN(10) < 7})
		}
		// The engine never leaves a head that fits queued.
		for len(r.Queue) > 0 && modelFits(&r, r.Holders, r.Queue[0].Writer) {
			c := r.Queue[0]
			c.Blocked = false
			r.Holders, r.Queue = append(r.Holders, c), r.Queue[1:]
		}
		g.Resources = append(g.Resources, r)
	}
	return g
}

func modelFits(r *Resource, holders []Claim, writer bool) bool {
	if !r.RW {
		return len(holders) < r.Limit
	}
	if writer {
		return len(holders) == 0
	}
	return len(holders) == 0 || !holders[0].Writer
}

func model(g *Graph) []Deadlock {
	type state struct{ holders, queue []Claim }
	st := make([]state, len(g.Resources))
	all := map[uint64]bool{}
	for i, r := range g.Resources {
		st[i] = state{slices.Clone(r.Holders), slices.Clone(r.Queue)}
		for _, c := range append(slices.Clone(r.Holders), r.Queue...) {
			all[c.Session] = true
		}
	}
	done, resumed := map[uint64]bool{}, map[uint64]bool{}
	for changed := true; changed; {
		changed = false
		for i := range st {
			r := &g.Resources[i]
			for len(st[i].queue) > 0 && modelFits(r, st[i].holders, st[i].queue[0].Writer) {
				c := st[i].queue[0]
				if c.Blocked {
					resumed[c.Session] = true
				}
				c.Blocked = false
				st[i].holders, st[i].queue = append(st[i].holders, c), st[i].queue[1:]
			}
		}
		for s := range all {
			if done[s] {
				continue
			}
			parked := false
			for i := range st {
				for _, c := range st[i].queue {
					parked = parked || (c.Session == s && c.Blocked)
				}
			}
			if parked && !resumed[s] {
				continue
			}
			done[s], changed = true, true
			for i := range st {
				st[i].holders = slices.DeleteFunc(st[i].holders, func(c Claim) bool { return c.Session == s })
				st[i].queue = slices.DeleteFunc(st[i].queue, func(c Claim) bool { return c.Session == s })
			}
		}
	}
	var stuck []uint64
	for s := range all {
		if !done[s] {
			stuck = append(stuck, s)
		}
	}
	slices.Sort(stuck)
	idx := map[uint64]int{}
	for i, s := range stuck {
		idx[s] = i
	}
	n := len(stuck)
	reach := make([][]bool, n)
	type edge struct {
		from, to uint64
		res      int
	}
	var edges []edge
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	for ri := range st {
		for qi, c := range st[ri].queue {
			if !c.Blocked {
				continue
			}
			for _, h := range st[ri].holders {
				edges = append(edges, edge{c.Session, h.Session, ri})
			}
			for _, a := range st[ri].queue[:qi] {
				if a.Session != c.Session {
					edges = append(edges, edge{c.Session, a.Session, ri})
				}
			}
		}
	}
	for _, e := range edges {
		reach[idx[e.from]][idx[e.to]] = true
	}
	for k := range n {
		for i := range n {
			for j := range n {
				reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
			}
		}
	}
	var out []Deadlock
	member := map[uint64]int{}
	for i, s := range stuck {
		if !reach[i][i] {
			continue
		}
		if _, ok := member[s]; ok {
			continue
		}
		d := Deadlock{}
		for j, t := range stuck {
			if reach[i][j] && reach[j][i] {
				d.Sessions = append(d.Sessions, t)
				member[t] = len(out)
			}
		}
		out = append(out, d)
	}
	for di := range out {
		d := &out[di]
		in := func(s uint64) bool { m, ok := member[s]; return ok && m == di }
		waits := map[[2]uint64]*Wait{} // (session, resource)
		var order [][2]uint64
		for _, e := range edges {
			if !in(e.from) || !in(e.to) {
				continue
			}
			k := [2]uint64{e.from, uint64(e.res)}
			w := waits[k]
			if w == nil {
				r := &g.Resources[e.res]
				w = &Wait{Session: e.from, Key: Key{r.Key, r.Kind}}
				waits[k] = w
				order = append(order, k)
			}
			if !slices.Contains(w.On, e.to) {
				w.On = append(w.On, e.to)
			}
		}
		for _, k := range order {
			w := waits[k]
			slices.Sort(w.On)
			d.Waits = append(d.Waits, *w)
			if !slices.Contains(d.Keys, w.Key) {
				d.Keys = append(d.Keys, w.Key)
			}
		}
		slices.SortFunc(d.Waits, func(a, b Wait) int {
			if a.Session != b.Session {
				return int(a.Session) - int(b.Session)
			}
			if a.Key.Key < b.Key.Key {
				return -1
			}
			if a.Key.Key > b.Key.Key {
				return 1
			}
			return 0
		})
		slices.SortFunc(d.Keys, func(a, b Key) int {
			if a.Key < b.Key {
				return -1
			}
			if a.Key > b.Key {
				return 1
			}
			return 0
		})
		for j, t := range stuck {
			if _, ok := member[t]; ok {
				continue
			}
			for _, s := range d.Sessions {
				if reach[j][idx[s]] {
					d.Behind = append(d.Behind, t)
					break
				}
			}
		}
	}
	return out
}

func dump(g *Graph) string {
	s := ""
	for _, r := range g.Resources {
		s += fmt.Sprintf("\n  %s %s limit=%d holders=%+v queue=%+v", r.Kind, r.Key, r.Limit, r.Holders, r.Queue)
	}
	return s
}
