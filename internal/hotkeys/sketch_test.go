package hotkeys

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkBounds holds the sketch to Space-Saving's guarantees against the
// exact weights of the stream it saw.
func checkBounds(t *testing.T, s *Sketch[string], exact map[string]uint64, total uint64) {
	t.Helper()
	if s.Total() != total {
		t.Fatalf("total %d, want %d", s.Total(), total)
	}
	if s.Len() > s.Capacity() {
		t.Fatalf("%d keys counted, capacity %d", s.Len(), s.Capacity())
	}
	counted := map[string]Entry[string]{}
	var sum uint64
	for _, e := range s.Top(s.Capacity(), nil) {
		if _, dup := counted[e.Key]; dup {
			t.Fatalf("key %q counted twice", e.Key)
		}
		counted[e.Key] = e
		sum += e.Count
		if w := exact[e.Key]; w > e.Count || e.Count-e.Err > w {
			t.Fatalf("key %q: true weight %d outside [Count-Err, Count] = [%d, %d]", e.Key, w, e.Count-e.Err, e.Count)
		}
	}
	if len(counted) == s.Capacity() && sum != total {
		t.Fatalf("a full sketch's counts sum to %d, want the total %d", sum, total)
	}
	bound := total / uint64(s.Capacity())
	for k, w := range exact {
		if _, ok := counted[k]; !ok && w > bound {
			t.Fatalf("key %q of weight %d > N/k = %d is not counted", k, w, bound)
		}
	}
}

// Random streams, uniform and skewed, unit and weighted: the bounds hold
// at every step, and the top of a skewed stream is its true top.
func TestSketchAgainstExactModel(t *testing.T) {
	for _, c := range []struct {
		name     string
		keys, k  int
		zipf     bool
		weighted bool
	}{
		{"uniform-unit", 500, 32, false, false},
		{"zipf-unit", 5000, 64, true, false},
		{"zipf-weighted", 5000, 64, true, true},
		{"uniform-weighted", 200, 16, false, true},
		{"fits", 20, 32, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			for seed := range uint64(5) {
				r := rand.New(rand.NewPCG(seed, 7))
				z := rand.NewZipf(r, 1.3, 1, uint64(c.keys-1))
				s := New(c.k, strings.Compare)
				exact := map[string]uint64{}
				var total uint64
				for i := range 20000 {
					n := r.IntN(c.keys)
					if c.zipf {
						n = int(z.Uint64())
					}
					key := fmt.Sprintf("k%d", n)
					w := uint64(1)
					if c.weighted {
						w = uint64(r.IntN(1000)) // waits in ms; 0 adds nothing
					}
					s.Add(key, w)
					exact[key] += w
					total += w
					if i%997 == 0 {
						checkBounds(t, s, exact, total)
					}
				}
				checkBounds(t, s, exact, total)
				if c.zipf && !c.weighted {
					// The heaviest key of a Zipf stream is far above N/k.
					if top := s.Top(1, nil); top[0].Key != "k0" {
						t.Fatalf("seed %d: top key %q, want k0", seed, top[0].Key)
					}
				}
				if c.keys <= c.k {
					for k, w := range exact {
						if w == 0 {
							continue
						}
						if e := findEntry(s, k); e.Count != w || e.Err != 0 {
							t.Fatalf("a sketch with room for every key counts %q as %+v, want exactly %d", k, e, w)
						}
					}
				}
			}
		})
	}
}

func findEntry(s *Sketch[string], key string) Entry[string] {
	for _, e := range s.Top(s.Capacity(), nil) {
		if e.Key == key {
			return e
		}
	}
	return Entry[string]{}
}

// Top returns at most n, highest first.
func TestSketchTopOrder(t *testing.T) {
	s := New(8, strings.Compare)
	for i, k := range []string{"a", "b", "b", "c", "c", "c"} {
		_ = i
		s.Add(k, 1)
	}
	top := s.Top(2, nil)
	if len(top) != 2 || top[0].Key != "c" || top[0].Count != 3 || top[1].Key != "b" || top[1].Count != 2 {
		t.Fatalf("top 2: %+v", top)
	}
}

// Counting a key already counted, and replacing the smallest counter of a
// full sketch, allocate nothing.
func TestSketchAddDoesNotAllocate(t *testing.T) {
	s := New(4, strings.Compare)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	for _, k := range keys {
		s.Add(k, 1)
	}
	i := 0
	if n := testing.AllocsPerRun(1000, func() { s.Add(keys[i%len(keys)], 1); i++ }); n != 0 {
		t.Fatalf("Add allocates %.1f times", n)
	}
}
