package engine

import "hash/maphash"

// resTable indexes one namespace of a shard's resources by key: an
// open-addressed hash table (linear probing, backward-shift deletion) of
// resource pointers, with one byte of each entry's hash beside it.
//
// Why not a map[string]*resource: a map entry holds the key's string
// header (16 bytes) beside the pointer, although the resource already
// holds the key, so a map costs 25 bytes a slot against this table's 9.
// With the slots' load between 7/16 and 7/8 that is about 34 bytes a
// held lock against 12 (issue #21: the memory a held lock costs).
//
// Iteration order is the slots' order, which depends on the random seed
// like a map's: every caller that needs an order sorts, as with a map.
// The seed also keeps crafted keys from piling into one probe run.
type resTable struct {
	seed  maphash.Seed
	slots []*resource
	// tags[i] is tagOf the hash of slots[i]'s key; 0 marks an empty slot,
	// so a probe reads the tags and follows a pointer only on a match.
	tags []uint8
	n    int
}

const (
	// minResSlots is the size of a table's first allocation: small, since
	// most shards of an idle server hold few keys.
	minResSlots = 8
	// A table grows when it would be more than 7/8 full, as Go's maps do:
	// probe runs stay short (the tags make each step one byte) while the
	// slots stay mostly used.
	resLoadNum, resLoadDen = 7, 8
)

func newResTable() resTable { return resTable{seed: maphash.MakeSeed()} }

// tagOf is the byte of h stored beside its entry: the top 7 bits, with
// the high bit set so that it is never the empty mark 0.
func tagOf(h uint64) uint8 { return uint8(h>>57) | 0x80 }

func (t *resTable) len() int { return t.n }

// get returns the resource of key, or nil. It does not allocate.
func (t *resTable) get(key []byte) *resource {
	if t.n == 0 {
		return nil
	}
	h := maphash.Bytes(t.seed, key)
	mask, tag := len(t.slots)-1, tagOf(h)
	for i := int(h) & mask; t.tags[i] != 0; i = (i + 1) & mask {
		if t.tags[i] == tag && t.slots[i].key() == string(key) {
			return t.slots[i]
		}
	}
	return nil
}

// getString is get for a key held as a string.
func (t *resTable) getString(key string) *resource {
	if t.n == 0 {
		return nil
	}
	h := maphash.String(t.seed, key)
	mask, tag := len(t.slots)-1, tagOf(h)
	for i := int(h) & mask; t.tags[i] != 0; i = (i + 1) & mask {
		if t.tags[i] == tag && t.slots[i].key() == key {
			return t.slots[i]
		}
	}
	return nil
}

// put adds r, whose key must not be in the table yet.
func (t *resTable) put(r *resource) {
	if (t.n+1)*resLoadDen > len(t.slots)*resLoadNum {
		t.grow()
	}
	t.insert(r, maphash.String(t.seed, r.key()))
	t.n++
}

// insert places r in the first empty slot of its probe run.
func (t *resTable) insert(r *resource, h uint64) {
	mask := len(t.slots) - 1
	i := int(h) & mask
	for t.tags[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i], t.tags[i] = r, tagOf(h)
}

func (t *resTable) grow() {
	old := t.slots
	n := max(minResSlots, 2*len(old))
	t.slots, t.tags = make([]*resource, n), make([]uint8, n)
	for _, r := range old {
		if r != nil {
			t.insert(r, maphash.String(t.seed, r.key()))
		}
	}
}

// del removes r, which must be in the table.
func (t *resTable) del(r *resource) {
	mask := len(t.slots) - 1
	i := int(maphash.String(t.seed, r.key())) & mask
	for t.slots[i] != r {
		if t.tags[i] == 0 {
			panic("engine: deleting a resource that is not in its table")
		}
		i = (i + 1) & mask
	}
	t.removeAt(i)
}

// removeAt empties slot i and shifts the later entries of its probe run
// back, so that no run has a hole (linear probing's deletion without
// tombstones). An entry moves into the hole only if its home slot is not
// cyclically inside (hole, its slot].
func (t *resTable) removeAt(i int) {
	mask := len(t.slots) - 1
	t.n--
	for j := i; ; {
		t.slots[i], t.tags[i] = nil, 0
		for {
			j = (j + 1) & mask
			if t.tags[j] == 0 {
				return
			}
			home := int(maphash.String(t.seed, t.slots[j].key())) & mask
			if (j-home)&mask >= (j-i)&mask {
				break // home at or before the hole: it may move there
			}
		}
		t.slots[i], t.tags[i] = t.slots[j], t.tags[j]
		i = j
	}
}

// all yields every resource, for range-over-func. The table must not be
// changed during the iteration (sweep is the deleting iteration).
func (t *resTable) all(yield func(*resource) bool) {
	for _, r := range t.slots {
		if r != nil && !yield(r) {
			return
		}
	}
}

// sweep removes every resource for which drop reports true and returns
// how many it removed. drop may be called twice for one resource (a
// backward shift can carry an entry past the scan across the wrap), so
// it must answer the same for one that it kept.
func (t *resTable) sweep(drop func(*resource) bool) int {
	removed := 0
	for i := 0; i < len(t.slots); {
		if r := t.slots[i]; r != nil && drop(r) {
			t.removeAt(i)
			removed++
			continue // slot i now holds an entry shifted back, unvisited
		}
		i++
	}
	return removed
}
