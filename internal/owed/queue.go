// Package owed keeps the answers a connection is owed in the order of its
// requests: the one sequencer of the line protocol, godistlock and HTTP
// sessions (issue #37; architecture.md §10.1). A request whose answer does
// not come at once — a wait that ends later, a cluster member's command
// answered when its raft log entry applies — reserves a place at the tail
// when it is made; its answer fills the oldest open place when it comes;
// the filled places at the head leave in order.
//
// The queue does not match an answer to its request by any id: the
// applier's contract (session.Hub.Call) is that owed answers come in
// the order of the calls that owe them, and the line protocol's answers
// carry nothing to match on. So the filled places are always a prefix and
// the open ones the rest, and an answer nobody is owed (a demotion's
// notice to a session owed nothing) finds no place (Fill returns nil).
// What each protocol does with an answer — encoding it, counting it,
// voiding the rest on a demotion, waking a waiting caller — stays with it:
// the queue only holds, per place, the value T its protocol needs.
//
// Concurrency: none; a Queue belongs to one goroutine, or to its owner's
// lock (httpapi's replies). Memory: a queue holds one place inline and
// grows by doubling to the most places held at once, and never shrinks:
// its users bound what they may be owed (session's maxOwed; an HTTP call
// at a time), so once warm it does not allocate.
//
// owed knows nothing of engines, protocols or transports.
package owed

// Queue is a FIFO of the places reserved for owed answers, oldest first:
// the first Ready ones are filled and may leave (Next), the Open ones
// after them wait for their answers. The zero value is an empty queue.
// Values taken out of the queue are zeroed in it, so that it keeps no
// reference alive (a nonce copy, a result's bytes).
type Queue[T any] struct {
	// one is the storage while at most one place is needed (a single
	// node's session is owed at most the answer of the request that
	// waits): most connections never allocate. It is used when buf is nil
	// rather than sliced into buf, so that copying a Queue before use
	// cannot alias it.
	one  [1]T
	buf  []T // the ring once more is needed; its length a power of two
	head int // index in buf of the oldest place
	n    int // places held
	open int // the newest open of them are waiting for their answers
}

// Len is the number of places held, filled or open.
func (q *Queue[T]) Len() int { return q.n }

// Open is the number of answers still to come.
func (q *Queue[T]) Open() int { return q.open }

// Ready is the number of filled places at the head, which Next takes.
func (q *Queue[T]) Ready() int { return q.n - q.open }

// At is the i-th place from the oldest (0 ≤ i < Len): what it holds
// stays valid until the next Reserve, Next, Unreserve or DropOpen.
func (q *Queue[T]) At(i int) *T {
	if i < 0 || i >= q.n {
		panic("owed: At outside the places held")
	}
	return q.at(i)
}

func (q *Queue[T]) at(i int) *T {
	if q.buf == nil {
		return &q.one[0]
	}
	return &q.buf[(q.head+i)&(len(q.buf)-1)]
}

// Reserve puts an open place holding v at the tail: a request whose
// answer will come later, with what its answer will need.
func (q *Queue[T]) Reserve(v T) {
	if q.n == q.capacity() {
		q.grow()
	}
	q.n++
	q.open++
	*q.at(q.n - 1) = v
}

func (q *Queue[T]) capacity() int {
	if q.buf == nil {
		return len(q.one)
	}
	return len(q.buf)
}

// grow doubles the ring (4 places at first), keeping the places in order.
func (q *Queue[T]) grow() {
	b := make([]T, max(4, 2*q.capacity()))
	for i := range q.n {
		b[i] = *q.at(i)
	}
	q.one = [1]T{}
	q.buf, q.head = b, 0
}

// Fill marks the oldest open place filled, its answer having come, and
// returns it so that the caller may store the answer in it; nil if no
// answer is owed. The place stays valid as At's.
func (q *Queue[T]) Fill() *T {
	if q.open == 0 {
		return nil
	}
	p := q.at(q.n - q.open)
	q.open--
	return p
}

// FillAll marks every open place filled: one answer settles them all (a
// demotion's error_not_leader: nothing the log owed will come).
func (q *Queue[T]) FillAll() { q.open = 0 }

// Next takes the oldest place if it is filled: its answer may leave, every
// answer before it having left.
func (q *Queue[T]) Next() (v T, ok bool) {
	if q.n == q.open {
		return v, false
	}
	p := q.at(0)
	v = *p
	*p = *new(T)
	q.n--
	if q.buf != nil {
		q.head = (q.head + 1) & (len(q.buf) - 1)
	}
	return v, true
}

// Unreserve takes back the newest place, filled or open: its request was
// answered some other way (at once, after the place was reserved in case
// it would not be).
func (q *Queue[T]) Unreserve() {
	if q.n == 0 {
		panic("owed: Unreserve with no place held")
	}
	*q.at(q.n - 1) = *new(T)
	q.n--
	if q.open > 0 {
		q.open-- // the open places are the newest
	}
}

// DropOpen takes back every open place: their answers will not come (a
// withdrawal took the request away, a demotion voided what the log owed).
func (q *Queue[T]) DropOpen() {
	for q.open > 0 {
		*q.at(q.n - 1) = *new(T)
		q.n--
		q.open--
	}
}
