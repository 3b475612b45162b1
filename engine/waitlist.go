package engine

// waitList is an intrusive doubly-linked FIFO for the waiters of lists and
// barriers: a waiter embeds its links, so queueing allocates nothing and
// removal from the middle (a timeout, a disconnect) is O(1). Lock and
// semaphore slots keep their own slotList, which also searches by token.
type waitList[T any, P waitNode[T]] struct {
	head, tail *T
	n          int
}

// waitLinks are the links a waiter embeds.
type waitLinks[T any] struct{ prev, next *T }

// waitNode is a pointer to a waiter that can reach its links.
type waitNode[T any] interface {
	*T
	links() *waitLinks[T]
}

func (q *waitList[T, P]) pushBack(w *T) {
	l := P(w).links()
	l.prev, l.next = q.tail, nil
	if q.tail != nil {
		P(q.tail).links().next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitList[T, P]) remove(w *T) {
	l := P(w).links()
	if l.prev != nil {
		P(l.prev).links().next = l.next
	} else {
		q.head = l.next
	}
	if l.next != nil {
		P(l.next).links().prev = l.prev
	} else {
		q.tail = l.prev
	}
	l.prev, l.next = nil, nil
	q.n--
}
