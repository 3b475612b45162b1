package engine

// shardCounts are the events a shard counts for Metrics.
type shardCounts struct {
	grants   uint64 // lock, semaphore and read-write grants (fence handed out)
	releases uint64 // holders gone, for any reason (release, expiry, disconnect)
	expiries uint64 // leases that ended without a release
	timeouts uint64 // acquire and wait timeouts
	// wait and hold are the latency histograms (latency.go).
	wait, hold Latency
}

// Metrics is what the engine reports to a metrics scrape: event counts
// since it started and the current holds and waits.
type Metrics struct {
	Grants, Releases, LeaseExpiries, Timeouts uint64
	// LocksHeld counts keys of limit 1 with a holder, LockWaiters their
	// queued acquires; SemaphoreSlots and SemaphoreWaiters the same for
	// semaphores (limit > 1), RWHolders and RWWaiters for read-write
	// locks. (Under v1 and rf a limit-1 semaphore is a lock.)
	LocksHeld, LockWaiters           int
	SemaphoreSlots, SemaphoreWaiters int
	RWHolders, RWWaiters             int
	// Keys counts lock, semaphore and read-write keys (--max-locks).
	Keys int
}

// Metrics counts under each shard's lock in turn: a scrape costs a pass
// over the keys, the request path only a plain increment per event.
func (e *Engine) Metrics() Metrics {
	var m Metrics
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		c := sh.counts
		m.Grants += c.grants
		m.Releases += c.releases
		m.LeaseExpiries += c.expiries
		m.Timeouts += c.timeouts
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				m.Keys++
				switch {
				case r.isRW():
					m.RWHolders += r.nHolders()
					m.RWWaiters += sh.queueOf(r).n
				case r.limit == 1:
					if r.nHolders() > 0 {
						m.LocksHeld++
					}
					m.LockWaiters += sh.queueOf(r).n
				default:
					m.SemaphoreSlots += r.nHolders()
					m.SemaphoreWaiters += sh.queueOf(r).n
				}
			}
		}
		sh.mu.Unlock()
	}
	return m
}
