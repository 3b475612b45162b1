package netconn

import (
	"time"

	"github.com/dflockd-ng/dflockd/internal/quietrelease"
)

// The free heap goes back to the OS once the server falls quiet (no read
// for a whole interval), as the gnet loops do: internal/quietrelease.

// defaultQuietInterval is the gnet loops' default: the idle-key GC's
// interval, at which they look.
const defaultQuietInterval = 5 * time.Second

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
	q := quietrelease.New()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			q.Tick(s.reads())
		case <-s.quit:
			return
		}
	}
}
