package timerwheel

import "container/heap"

// refItem and refHeap are the reference the wheel is checked and measured
// against: a container/heap min-heap of deadlines with index tracking, so
// it supports O(log n) cancel and reset like a production heap timer would.
type refItem struct {
	deadline Tick
	id       int
	index    int // position in the heap, -1 when not in it
}

type refHeap []*refItem

func (h refHeap) Len() int           { return len(h) }
func (h refHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h refHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *refHeap) Push(x any) {
	it := x.(*refItem)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *refHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

func (h *refHeap) add(it *refItem)    { heap.Push(h, it) }
func (h *refHeap) remove(it *refItem) { heap.Remove(h, it.index) }

func (h *refHeap) reset(it *refItem, deadline Tick) {
	it.deadline = deadline
	heap.Fix(h, it.index)
}

// min returns the earliest deadline, ok=false when empty.
func (h refHeap) min() (Tick, bool) {
	if len(h) == 0 {
		return 0, false
	}
	return h[0].deadline, true
}
