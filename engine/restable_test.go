package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The table against a map, over random puts, deletes, lookups and sweeps
// on a few hundred keys: enough churn for long probe runs, wrap-around at
// the table's end and backward shifts across it.
func TestResTableModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		tab := newResTable()
		model := map[string]*resource{}
		for step := 0; step < 4000; step++ {
			key := fmt.Sprintf("k%d", rng.IntN(300))
			switch op := rng.IntN(10); {
			case op < 4:
				if model[key] == nil {
					r := newResource(key, nsLock, 1, false, 0)
					model[key] = r
					tab.put(r)
				}
			case op < 7:
				if r := model[key]; r != nil {
					delete(model, key)
					tab.del(r)
				}
			case op < 9:
				if got, want := tab.get([]byte(key)), model[key]; got != want {
					t.Fatalf("seed %d step %d: get(%s) = %p, want %p", seed, step, key, got, want)
				}
				if got, want := tab.getString(key), model[key]; got != want {
					t.Fatalf("seed %d step %d: getString(%s) = %p, want %p", seed, step, key, got, want)
				}
			default: // sweep the keys whose number ends in the step's digit
				d := byte('0' + step%10)
				drop := func(r *resource) bool { k := r.key(); return k[len(k)-1] == d }
				want := 0
				for k, r := range model {
					if drop(r) {
						delete(model, k)
						want++
					}
				}
				if got := tab.sweep(drop); got != want {
					t.Fatalf("seed %d step %d: sweep removed %d, want %d", seed, step, got, want)
				}
			}
			if tab.len() != len(model) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, tab.len(), len(model))
			}
		}
		seen := map[string]bool{}
		for r := range tab.all {
			if model[r.key()] != r || seen[r.key()] {
				t.Fatalf("seed %d: all yields %s (in model: %v, twice: %v)", seed, r.key(), model[r.key()] == r, seen[r.key()])
			}
			seen[r.key()] = true
		}
		if len(seen) != len(model) {
			t.Fatalf("seed %d: all yields %d resources, want %d", seed, len(seen), len(model))
		}
		for k, r := range model {
			if tab.getString(k) != r {
				t.Fatalf("seed %d: %s lost", seed, k)
			}
		}
	}
}

func TestResTableEmpty(t *testing.T) {
	tab := newResTable()
	if tab.get([]byte("x")) != nil || tab.getString("x") != nil || tab.sweep(func(*resource) bool { return true }) != 0 {
		t.Fatal("an empty table found something")
	}
	r := newResource("x", nsLock, 1, false, 0)
	tab.put(r)
	tab.del(r)
	if tab.get([]byte("x")) != nil || tab.len() != 0 {
		t.Fatal("a deleted resource is still found")
	}
}
