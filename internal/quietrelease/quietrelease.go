// Package quietrelease returns the free heap to the OS once a server falls
// quiet. After a burst (a flood of stats, a fan-out to thousands of
// subscribers, thousands of TLS handshakes, connections closing) most of
// the heap is garbage, but with no more allocation nothing triggers a GC
// for up to two minutes, and then the runtime's scavenger returns pages
// slowly: an operator watching RSS would see the peak stay. One forced GC
// and release per quiet spell costs a few milliseconds of a background
// goroutine; doing it only when the traffic count has not moved for a
// whole tick keeps it off a busy server's request path. The gnet loops
// and the TLS transport both use it.
package quietrelease

import "runtime/debug"

// Releaser decides when to release; Tick runs every interval on one
// goroutine.
type Releaser struct {
	last     uint64 // traffic count at the previous tick
	released bool   // released since traffic last moved
	release  func()
}

// New returns a Releaser that calls debug.FreeOSMemory.
func New() *Releaser { return &Releaser{release: debug.FreeOSMemory} }

// Tick takes the total traffic so far (reads, events: any count that
// moves while the server works) and releases once per quiet spell.
func (q *Releaser) Tick(traffic uint64) {
	if traffic != q.last {
		q.last, q.released = traffic, false
		return
	}
	if !q.released {
		q.released = true
		q.release()
	}
}
