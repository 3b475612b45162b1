package engine

// claimLog is a session's record of its claims, in the order it made
// them: the first claimChunk in head, a slice that grows by doubling as a
// small session's did, then fixed chunks of claimChunk.
//
// Why not one slice: a session holding thousands of locks grew its slice
// by copying, and every array it outgrew was garbage that the server's
// RSS kept: 30 B a held lock beside the 16 of the claim itself, at 1000
// locks a session (issue #37). Chunks are never copied, and waste at most
// one partly filled chunk a session.
//
// Only the session's own goroutine uses it (session.record, close,
// cancel), like the slice it replaces.
type claimLog struct {
	head []claim
	rest []*[claimChunk]claim
	n    int // claims in rest; len(head) is claimChunk while n > 0
	// compactAt is the length at which the next record compacts: twice
	// the live claims the last compaction kept, so compaction costs O(1)
	// a record, as the slice's compaction when full did.
	compactAt int
}

// claimChunk is the number of claims in one chunk: 127 of 16 bytes and
// the 8-byte header the runtime gives an object over 512 bytes that holds
// pointers fill the 2048-byte size class (128 would take the 2304 one).
const claimChunk = 127

func (l *claimLog) len() int { return len(l.head) + l.n }

// push appends c.
func (l *claimLog) push(c claim) {
	if l.n == 0 && len(l.head) < claimChunk {
		if len(l.head) == cap(l.head) {
			grown := make([]claim, len(l.head), min(max(2*cap(l.head), 4), claimChunk))
			copy(grown, l.head)
			l.head = grown
		}
		l.head = append(l.head, c)
		return
	}
	if l.n == len(l.rest)*claimChunk {
		l.rest = append(l.rest, new([claimChunk]claim))
	}
	l.rest[l.n/claimChunk][l.n%claimChunk] = c
	l.n++
}

// at is the claim at position i < len().
func (l *claimLog) at(i int) *claim {
	if i < len(l.head) {
		return &l.head[i]
	}
	i -= len(l.head) // len(head) is claimChunk: rest is in use
	return &l.rest[i/claimChunk][i%claimChunk]
}

// Callers read the claims in order a slice at a time, chunk(0) to
// chunk(nchunks()-1), in plain loops: a call per claim (an iterator)
// cost a hand-off 15 %, as findWait runs on every request of a session
// whose last request waited. The log must not change meanwhile.

// nchunks is the number of slices chunk serves.
func (l *claimLog) nchunks() int { return 1 + (l.n+claimChunk-1)/claimChunk }

// chunk is the i-th slice of claims: head, then rest's chunks as filled.
func (l *claimLog) chunk(i int) []claim {
	if i == 0 {
		return l.head
	}
	i = (i - 1) * claimChunk
	return l.rest[i/claimChunk][:min(claimChunk, l.n-i)]
}

// compact keeps, in order, the claims for which keep reports true. It
// keeps the chunks the log will fill before its next compaction, when it
// has doubled, and drops the others.
func (l *claimLog) compact(keep func(claim) bool) {
	if l.n == 0 { // all in head: the common case, as the slice did it
		live := l.head[:0]
		for _, c := range l.head {
			if keep(c) {
				live = append(live, c)
			}
		}
		clear(l.head[len(live):])
		l.head = live
		l.compactAt = 2 * len(live)
		if need := max(0, (2*len(live)-1)/claimChunk); need < len(l.rest) {
			clear(l.rest[need:])
			l.rest = l.rest[:need]
		}
		return
	}
	total, k := l.len(), 0
	for i := range total {
		if c := *l.at(i); keep(c) {
			*l.at(k) = c // k ≤ i: a position already read
			k++
		}
	}
	for i := k; i < total; i++ {
		*l.at(i) = claim{} // let the GC have the slots
	}
	if k < len(l.head) {
		l.head, l.n = l.head[:k], 0
	} else {
		l.n = k - len(l.head)
	}
	if need := max(0, (2*k-1)/claimChunk); need < len(l.rest) {
		clear(l.rest[need:])
		l.rest = l.rest[:need]
	}
	l.compactAt = 2 * k
}
