package loop

import "runtime/debug"

// quietReleaser returns the free heap to the OS once the server falls
// quiet. After a burst (a flood of stats, a fan-out to thousands of
// subscribers, thousands of connections closing) most of the heap is
// garbage, but with no more allocation nothing triggers a GC for up to
// two minutes, and then the runtime's scavenger returns the pages slowly:
// an operator watching RSS would see the peak stay. One forced GC and
// release per quiet spell costs a few milliseconds of a loop-free
// goroutine; doing it only when no connection has had traffic for a
// whole tick keeps it off a busy server's request path.
type quietReleaser struct {
	last     uint64 // traffic count at the previous tick
	released bool   // released since traffic last moved
	release  func()
}

func newQuietReleaser() *quietReleaser {
	return &quietReleaser{release: debug.FreeOSMemory}
}

// tick runs every GC interval with the total traffic events so far.
func (q *quietReleaser) tick(traffic uint64) {
	if traffic != q.last {
		q.last, q.released = traffic, false
		return
	}
	if !q.released {
		q.released = true
		q.release()
	}
}

// traffic sums the loops' traffic counters.
func (s *Server) traffic() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, lp := range s.loopList {
		if lp != nil {
			n += lp.traffic.Load()
		}
	}
	return n
}
