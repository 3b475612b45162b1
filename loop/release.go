package loop

import (
	"runtime/debug"
	"runtime/metrics"
)

// releaseMin is the free heap worth handing back to the OS at once.
const releaseMin = 4 << 20

// quietReleaser returns the free heap to the OS once the server falls
// quiet. The Go runtime keeps a heap sized for its last peak until GCs
// and its background scavenger bring it down, which under no allocation
// takes minutes; an operator who watches RSS after a burst (a flood of
// stats, a fan-out to thousands of subscribers) expects it to come back.
// Releasing only when no connection has had traffic for a whole tick
// keeps the forced GC off a busy server's request path.
type quietReleaser struct {
	last     uint64 // traffic count at the previous tick
	released bool   // released since traffic last moved
	free     func() uint64
	release  func()
}

func newQuietReleaser() *quietReleaser {
	return &quietReleaser{free: heapFree, release: debug.FreeOSMemory}
}

// tick runs every GC interval with the total traffic events so far.
func (q *quietReleaser) tick(traffic uint64) {
	if traffic != q.last {
		q.last, q.released = traffic, false
		return
	}
	if q.released {
		return
	}
	q.released = true
	if q.free() >= releaseMin {
		q.release()
	}
}

// heapFree is the heap memory the runtime holds free and has not returned.
func heapFree() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
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
