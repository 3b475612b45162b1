package lincheck

import (
	"fmt"
	"sync/atomic"
)

// Rotation hands out generations of keys so that no partition of a
// history grows past a bound, whatever the run's length or rate: porcupine
// keeps a partition's whole search in memory, and an operation of unknown
// outcome stays concurrent with everything after it in its partition, so
// one long-lived key makes the check's time and memory grow without limit.
//
// Every operation takes a ticket with Next before it is sent; tickets are
// numbered from 0 and generation g is tickets [g·Per, (g+1)·Per). A client
// sends an operation only on keys of its ticket's generation (Key), so the
// keys of a generation, hence each partition (one key of one generation),
// see at most Per operations. A ticket not used for an operation is simply
// lost: partitions only get smaller. Safe for concurrent use.
type Rotation struct {
	per  int64
	next atomic.Int64
}

// NewRotation returns a rotation of per operations a generation.
func NewRotation(per int) *Rotation {
	if per <= 0 {
		panic(fmt.Sprintf("lincheck: NewRotation(%d): a generation needs room for an operation", per))
	}
	return &Rotation{per: int64(per)}
}

// Next takes a ticket and returns its generation: the keys the next
// operation may use.
func (r *Rotation) Next() int64 { return (r.next.Add(1) - 1) / r.per }

// Per is the most operations of one generation.
func (r *Rotation) Per() int { return int(r.per) }

// Key is name's key in generation gen.
func Key(name string, gen int64) string { return fmt.Sprintf("%s.%d", name, gen) }
