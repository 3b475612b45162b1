package fence

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestVolatileSeedsFromClock(t *testing.T) {
	before := uint64(time.Now().UnixNano())
	a := NewVolatile()
	v := mustNext(t, a)
	after := uint64(time.Now().UnixNano())
	if v <= before || v > after+1 {
		t.Fatalf("first volatile fence %d not in (%d, %d]", v, before, after+1)
	}
	if w := mustNext(t, a); w != v+1 {
		t.Fatalf("second fence %d, want %d", w, v+1)
	}
	st := a.Stats()
	if st.Durable || st.Ceiling != maxFence || st.Last != v+1 || st.Persists != 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Next(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
}

func TestVolatileNeverWraps(t *testing.T) {
	a := newVolatile(maxFence - 3)
	for _, want := range []uint64{maxFence - 2, maxFence - 1} {
		if v := mustNext(t, a); v != want {
			t.Fatalf("fence %d, want %d", v, want)
		}
	}
	// The counter itself wraps after this; Next must keep refusing.
	for range 10 {
		if v, err := a.Next(); !errors.Is(err, ErrExhausted) {
			t.Fatalf("Next past 2^64-2 = %d, %v; want ErrExhausted", v, err)
		}
	}
	if l := a.Stats().Last; l != maxFence-1 {
		t.Fatalf("Stats.Last = %d, want 2^64-2", l)
	}
}

// Parallel Next: every value unique, each goroutine's values increasing,
// all inside (seed, ceiling).
func TestParallelNext(t *testing.T) {
	const goroutines, perG = 8, 20_000
	allocs := map[string]func(t *testing.T) *Allocator{
		"volatile": func(*testing.T) *Allocator { return NewVolatile() },
		"durable W=256": func(t *testing.T) *Allocator {
			return mustOpen(t, stateIn(t, nil), Options{Window: 256})
		},
	}
	for name, mk := range allocs {
		t.Run(name, func(t *testing.T) {
			if !durableSupported && name != "volatile" {
				t.Skip("durable files need Linux")
			}
			a := mk(t)
			seed := a.Stats().Seed
			got := make([][]uint64, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					vs := make([]uint64, 0, perG)
					for range perG {
						v, err := a.Next()
						if err != nil {
							t.Errorf("Next: %v", err)
							return
						}
						if len(vs) > 0 && v <= vs[len(vs)-1] {
							t.Errorf("goroutine %d: %d after %d", g, v, vs[len(vs)-1])
							return
						}
						vs = append(vs, v)
					}
					got[g] = vs
				}()
			}
			wg.Wait()
			all := slices.Concat(got...)
			slices.Sort(all)
			if len(all) != goroutines*perG {
				t.Fatalf("%d fences, want %d", len(all), goroutines*perG)
			}
			st := a.Stats()
			if all[0] <= seed || all[len(all)-1] >= st.Ceiling {
				t.Fatalf("fences span [%d, %d], want inside (%d, %d)", all[0], all[len(all)-1], seed, st.Ceiling)
			}
			for i := 1; i < len(all); i++ {
				if all[i] == all[i-1] {
					t.Fatalf("fence %d issued twice", all[i])
				}
			}
			// One counter: the values are exactly seed+1 … seed+N.
			if all[len(all)-1] != seed+uint64(len(all)) || st.Last != seed+uint64(len(all)) {
				t.Fatalf("fences end at %d (Stats.Last %d), want %d", all[len(all)-1], st.Last, seed+uint64(len(all)))
			}
			t.Logf("%s: %d persists, %d stalls", name, st.Persists, st.Stalls)
		})
	}
}

// Reserve with the counter kept by the caller (the engine): values from
// Seed()+1 on pass once the persister has covered them, the persister
// keeps up across many windows, and a reopened file seeds above every
// value that was reserved.
func TestReserveWithCallersCounter(t *testing.T) {
	if !durableSupported {
		t.Skip("durable files need Linux")
	}
	path := stateIn(t, nil)
	a, err := Open(path, Options{Window: 64, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	v := a.Seed()
	for range 10_000 {
		v++
		if err := a.Reserve(v); err != nil {
			t.Fatalf("Reserve(%d): %v", v, err)
		}
		if st := a.Stats(); v >= st.Ceiling {
			t.Fatalf("Reserve(%d) returned with the durable ceiling at %d", v, st.Ceiling)
		}
	}
	if st := a.Stats(); st.Persists < 10_000/64 {
		t.Fatalf("%d persists for 10,000 fences in windows of 64", st.Persists)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Reserve(v + 1); err == nil {
		t.Fatal("Reserve after Close succeeded")
	}
	b := mustOpen(t, path, Options{Window: 64})
	if b.Seed() <= v {
		t.Fatalf("reopened seed %d, not above the last reserved fence %d", b.Seed(), v)
	}
}
