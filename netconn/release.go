package netconn

import (
	"runtime/debug"
	"time"
)

// The free heap goes back to the OS once the server falls quiet, as the
// gnet loops do (loop/release.go): after a burst — thousands of TLS
// handshakes, each leaving tens of kilobytes of garbage, a flood of
// replies — nothing triggers a GC while the server idles, and an operator
// would watch the peak stay. One forced GC and release per quiet spell
// (no bytes read for a whole interval) costs milliseconds of this
// goroutine, never the request path.

// defaultQuietInterval is the gnet loops' default: the idle-key GC's
// interval, at which they look.
const defaultQuietInterval = 5 * time.Second

// quietReleaser decides when to release.
type quietReleaser struct {
	last     uint64 // reads counted at the previous tick
	released bool   // released since reads last moved
	release  func()
}

// tick runs every interval with the reads so far.
func (q *quietReleaser) tick(reads uint64) {
	if reads != q.last {
		q.last, q.released = reads, false
		return
	}
	if !q.released {
		q.released = true
		q.release()
	}
}

// reads sums the shards' read counts.
func (s *Server) reads() uint64 {
	var n uint64
	for _, sh := range s.shards {
		n += sh.reads.Load()
	}
	return n
}

// releaseWhenQuiet runs from the first Serve until the server stops.
func (s *Server) releaseWhenQuiet(every time.Duration) {
	defer s.bg.Done()
	q := &quietReleaser{release: debug.FreeOSMemory}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			q.tick(s.reads())
		case <-s.quit:
			return
		}
	}
}
