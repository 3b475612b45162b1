package owed

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A queue driven by hand: answers leave in request order, only once
// every answer before them has come.
func TestAnswersLeaveInRequestOrder(t *testing.T) {
	var q Queue[string]
	if _, ok := q.Next(); ok || q.Fill() != nil {
		t.Fatal("an empty queue gave something")
	}
	q.Reserve("a")
	q.Reserve("b")
	q.Reserve("c")
	if _, ok := q.Next(); ok {
		t.Fatal("an open place left")
	}
	*q.Fill() += "1"
	*q.Fill() += "2"
	if q.Len() != 3 || q.Open() != 1 || q.Ready() != 2 {
		t.Fatalf("len %d open %d ready %d, want 3 1 2", q.Len(), q.Open(), q.Ready())
	}
	var got []string
	for v, ok := q.Next(); ok; v, ok = q.Next() {
		got = append(got, v)
	}
	if !slices.Equal(got, []string{"a1", "b2"}) {
		t.Fatalf("left: %q", got)
	}
	if *q.At(0) != "c" {
		t.Fatalf("At(0) = %q, want c", *q.At(0))
	}
	*q.Fill() += "3"
	if v, _ := q.Next(); v != "c3" || q.Len() != 0 {
		t.Fatalf("got %q, len %d", v, q.Len())
	}
	if q.Fill() != nil {
		t.Fatal("an answer nobody is owed found a place")
	}
}

// Unreserve takes back the newest place, filled or open; DropOpen the
// open ones only.
func TestUnreserveAndDropOpen(t *testing.T) {
	var q Queue[int]
	q.Reserve(1)
	q.Reserve(2)
	q.Unreserve() // 2 was answered at once
	if q.Len() != 1 || q.Open() != 1 {
		t.Fatalf("len %d open %d, want 1 1", q.Len(), q.Open())
	}
	q.Reserve(3)
	*q.Fill() = 10 // 1's answer
	q.Reserve(4)
	q.DropOpen() // 3 and 4 withdrawn
	if q.Len() != 1 || q.Ready() != 1 {
		t.Fatalf("len %d ready %d, want 1 1", q.Len(), q.Ready())
	}
	q.Unreserve() // a filled place
	if q.Len() != 0 || q.Open() != 0 {
		t.Fatalf("len %d open %d after unreserving all", q.Len(), q.Open())
	}
}

// The queue against a model, a plain slice of places: random sequences
// of every operation, at random depths, around the ring's wrap and
// growth. What leaves must be what the model says, in request order.
func TestQueueMatchesModel(t *testing.T) {
	type place struct {
		id     int
		filled bool
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 37))
		var (
			q      Queue[int]
			model  []place
			nextID int
			depth  = 1 + rng.IntN(40)
		)
		for step := range 2000 {
			switch op := rng.IntN(100); {
			case op < 35 && len(model) < depth:
				q.Reserve(nextID)
				model = append(model, place{id: nextID})
				nextID++
			case op < 65:
				p := q.Fill()
				i := slices.IndexFunc(model, func(p place) bool { return !p.filled })
				if (p == nil) != (i < 0) {
					t.Fatalf("seed %d step %d: Fill gave %v, model's oldest open is %d", seed, step, p, i)
				}
				if p != nil {
					if *p != model[i].id {
						t.Fatalf("seed %d step %d: filled %d, want %d", seed, step, *p, model[i].id)
					}
					model[i].filled = true
				}
			case op < 90:
				v, ok := q.Next()
				want := len(model) > 0 && model[0].filled
				if ok != want {
					t.Fatalf("seed %d step %d: Next ok %v, want %v", seed, step, ok, want)
				}
				if ok {
					if v != model[0].id {
						t.Fatalf("seed %d step %d: %d left, want %d", seed, step, v, model[0].id)
					}
					model = model[1:]
				}
			case op < 95 && len(model) > 0:
				q.Unreserve()
				model = model[:len(model)-1]
			case op < 97:
				q.DropOpen()
				model = slices.DeleteFunc(model, func(p place) bool { return !p.filled })
			case op < 98:
				q.FillAll()
				for i := range model {
					model[i].filled = true
				}
			}
			open := 0
			for i, p := range model {
				if !p.filled {
					open++
				} else if open > 0 {
					t.Fatalf("seed %d step %d: model has a filled place after an open one", seed, step)
				}
				if *q.At(i) != p.id {
					t.Fatalf("seed %d step %d: At(%d) = %d, want %d", seed, step, i, *q.At(i), p.id)
				}
			}
			if q.Len() != len(model) || q.Open() != open {
				t.Fatalf("seed %d step %d: len %d open %d, model %d %d", seed, step, q.Len(), q.Open(), len(model), open)
			}
		}
		// Bounded: the ring is the smallest power of two that held the
		// deepest the model went (at least the 4 of the first growth).
		if c := q.capacity(); c > max(4, 2*depth) {
			t.Fatalf("seed %d: capacity %d for a depth of at most %d", seed, c, depth)
		}
	}
}

// Places taken out are zeroed: the queue keeps nothing alive.
func TestTakenPlacesAreCleared(t *testing.T) {
	var q Queue[*int]
	for i := range 10 {
		q.Reserve(new(int))
		if i%2 == 0 {
			q.Fill()
			q.Next()
		}
	}
	q.Unreserve()
	q.DropOpen()
	for i, p := range q.buf {
		if p != nil {
			t.Fatalf("place %d still holds a pointer", i)
		}
	}
	q = Queue[*int]{}
	q.Reserve(new(int))
	q.Fill()
	q.Next()
	if q.one[0] != nil {
		t.Fatal("the inline place still holds a pointer")
	}
}
