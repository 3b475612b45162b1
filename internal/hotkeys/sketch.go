// Package hotkeys finds the heaviest keys of a stream in bounded memory:
// the Space-Saving sketch (Metwally, Agrawal, El Abbadi, "Efficient
// computation of frequent and top-k elements in data streams", 2005),
// weighted. It keeps k counters; a key not counted takes over the smallest
// counter, inheriting its count as its possible error. After a stream of
// total weight N:
//
//   - every counted key's true weight lies in [Count-Err, Count];
//   - every key whose true weight exceeds N/k is counted;
//   - the counts sum to N, so the smallest is at most N/k.
//
// The counters are a min-heap indexed by a map, so an update costs a map
// lookup and O(log k) swaps, and a full sketch replaces without
// allocating a new entry. A key is any comparable value (the engine's
// names a key and its kind: a lock and a semaphore may share a name);
// ties between equal counts are broken by the sketch's compare function,
// so that a top is the same whatever the order of the adds. Not safe for
// concurrent use: the engine updates a shard's sketches under that
// shard's lock.
package hotkeys

import (
	"cmp"
	"slices"
)

// Entry is one counted key.
type Entry[K comparable] struct {
	Key   K
	Count uint64 // an upper bound of the key's weight
	Err   uint64 // Count-Err is a lower bound
}

// Sketch is a Space-Saving summary of at most k keys.
type Sketch[K comparable] struct {
	k       int
	heap    []Entry[K]  // min-heap by Count
	index   map[K]int32 // key -> position in heap
	total   uint64
	compare func(a, b K) int // orders the keys of equal counts in Top
}

// New returns a sketch of k counters (k ≥ 1) whose Top orders keys of
// equal counts by compare (strings.Compare for string keys).
func New[K comparable](k int, compare func(a, b K) int) *Sketch[K] {
	k = max(k, 1)
	return &Sketch[K]{k: k, heap: make([]Entry[K], 0, k), index: make(map[K]int32, k), compare: compare}
}

// Capacity is k.
func (s *Sketch[K]) Capacity() int { return s.k }

// Total is the weight added so far (N).
func (s *Sketch[K]) Total() uint64 { return s.total }

// Len is the number of counted keys, at most k.
func (s *Sketch[K]) Len() int { return len(s.heap) }

// Add counts weight w for key. The sketch keeps key: a key holding a
// string should hold an immutable one (the engine's keys are).
func (s *Sketch[K]) Add(key K, w uint64) {
	if w == 0 {
		return
	}
	s.total += w
	if i, ok := s.index[key]; ok {
		s.heap[i].Count += w
		s.down(int(i))
		return
	}
	if len(s.heap) < s.k {
		s.heap = append(s.heap, Entry[K]{Key: key, Count: w})
		i := len(s.heap) - 1
		s.index[key] = int32(i)
		s.up(i)
		return
	}
	// Replace the smallest counter: its count becomes the newcomer's
	// possible overestimate.
	min := &s.heap[0]
	delete(s.index, min.Key)
	*min = Entry[K]{Key: key, Count: min.Count + w, Err: min.Count}
	s.index[key] = 0
	s.down(0)
}

// Top appends to dst the n counted keys of highest Count, highest first
// (ties by the sketch's compare), and returns it.
func (s *Sketch[K]) Top(n int, dst []Entry[K]) []Entry[K] {
	start := len(dst)
	dst = append(dst, s.heap...)
	SortTop(dst[start:], s.compare)
	if len(dst)-start > n {
		dst = dst[:start+max(n, 0)]
	}
	return dst
}

// SortTop orders entries highest Count first, ties by compare of their
// keys: the order Top returns, for callers that merge the tops of several
// sketches.
func SortTop[K comparable](es []Entry[K], compare func(a, b K) int) {
	slices.SortFunc(es, func(a, b Entry[K]) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return compare(a.Key, b.Key)
	})
}

func (s *Sketch[K]) less(i, j int) bool { return s.heap[i].Count < s.heap[j].Count }

func (s *Sketch[K]) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	s.index[h[i].Key] = int32(i)
	s.index[h[j].Key] = int32(j)
}

func (s *Sketch[K]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sketch[K]) down(i int) {
	n := len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}
