package engine

import (
	"encoding/json"

	"github.com/dflockd-ng/dflockd/parse"

	"github.com/valyala/bytebufferpool"
)

// The v2 stats shape (spec §F.1). Field order and names are the wire
// contract; arrays are never null.
type statsDoc struct {
	Connections    int        `json:"connections"`
	Locks          []lockStat `json:"locks"`
	Semaphores     []semStat  `json:"semaphores"`
	IdleLocks      []idleStat `json:"idle_locks"`
	IdleSemaphores []idleStat `json:"idle_semaphores"`
}

type lockStat struct {
	Key            string  `json:"key"`
	OwnerConnID    uint64  `json:"owner_conn_id"`
	LeaseExpiresIn float64 `json:"lease_expires_in_s"`
	Waiters        int     `json:"waiters"`
}

type semStat struct {
	Key     string `json:"key"`
	Limit   int    `json:"limit"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
}

type idleStat struct {
	Key   string  `json:"key"`
	IdleS float64 `json:"idle_s"`
}

// AppendStats appends the stats JSON (one line, no LF) to dst. Locks and
// semaphores are reported by namespace (spec §I.23): a semaphore of limit
// 1 stays under "semaphores".
func (e *Engine) AppendStats(dst []byte, connections int) []byte {
	doc := statsDoc{
		Connections:    connections,
		Locks:          []lockStat{},
		Semaphores:     []semStat{},
		IdleLocks:      []idleStat{},
		IdleSemaphores: []idleStat{},
	}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		now := e.clock.Now()
		for ns, m := range sh.res {
			for _, r := range m {
				if r.idle() {
					is := idleStat{Key: r.key, IdleS: float64(now-r.lastActive) / 1000}
					if namespace(ns) == nsLock {
						doc.IdleLocks = append(doc.IdleLocks, is)
					} else {
						doc.IdleSemaphores = append(doc.IdleSemaphores, is)
					}
					continue
				}
				if namespace(ns) == nsSem {
					doc.Semaphores = append(doc.Semaphores, semStat{Key: r.key, Limit: int(r.limit), Holders: r.holders.n, Waiters: r.queue.n})
					continue
				}
				ls := lockStat{Key: r.key, Waiters: r.queue.n}
				if h := r.holders.head; h != nil {
					ls.OwnerConnID = h.sess.ID
					ls.LeaseExpiresIn = max(0, float64(h.timer.Deadline()-now)/1000)
				}
				doc.Locks = append(doc.Locks, ls)
			}
		}
		sh.unlock()
	}
	buf := bytebufferpool.Get()
	defer bytebufferpool.Put(buf)
	enc := json.NewEncoder(buf)
	if err := enc.Encode(&doc); err != nil {
		panic("engine: stats document does not encode: " + err.Error())
	}
	b := buf.B
	return append(dst, b[:len(b)-1]...) // Encode ends with LF; the reply adds its own
}

// GC prunes lock and semaphore keys idle for --gc-max-idle (spec §D.6).
func (e *Engine) GC() {
	maxIdle := e.cfg.GCMaxIdle.Milliseconds()
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		sh.gcLocked(e.clock.Now(), maxIdle)
		sh.unlock()
	}
}

// Drain cancels every parked acquire and wait with error, for graceful
// shutdown (spec §D.5, §I.29).
func (e *Engine) Drain() {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.lock()
		now := e.clock.Now()
		for _, m := range sh.res {
			for _, r := range m {
				for sl := r.queue.head; sl != nil; {
					next := sl.next
					if sl.blocked {
						sess := sl.sess
						r.queue.remove(sl)
						sh.freeSlotLocked(sl)
						e.notify.Deliver(sess, status(parse.StatusError))
					}
					sl = next
				}
				sh.touchLocked(r, now)
			}
		}
		sh.unlock()
	}
}

// Keys reports the number of live lock and semaphore keys.
func (e *Engine) Keys() int { return int(e.keys.Load()) }
