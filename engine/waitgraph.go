package engine

import "github.com/dflockd-ng/dflockd/deadlock"

// WaitGraph returns the wait-for snapshot of the lock space for the
// deadlock search: every lock, semaphore and read-write lock that has a
// queue, with its holders and FIFO (keys nobody waits on cannot be part
// of a deadlock). Sessions are numbered by their SessionID.
//
// Shards are visited one at a time, as stats does, so the snapshot is not
// of one instant: a session may show as holding a key in one shard and
// waiting in another across a release it made meanwhile. A deadlock
// persists, so a caller confirms what it finds with a second snapshot
// (httpapi's deadlock monitor does).
func (e *Engine) WaitGraph() *deadlock.Graph {
	g := &deadlock.Graph{}
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		for ns := range sh.res {
			for r := range sh.res[ns].all {
				if !r.waiting() {
					continue
				}
				dr := deadlock.Resource{
					Key: r.key(), Kind: e.kindOf(namespace(ns), r).String(), Limit: int(r.limit), RW: r.isRW(),
					Holders: make([]deadlock.Claim, 0, r.nHolders()), Queue: make([]deadlock.Claim, 0, sh.queueOf(r).n),
				}
				for sl := r.holders; sl != nil; sl = sl.next {
					dr.Holders = append(dr.Holders, deadlock.Claim{Session: uint64(sl.sess.id), Writer: sl.writer()})
				}
				for sl := sh.queueOf(r).head; sl != nil; sl = sl.next {
					dr.Queue = append(dr.Queue, deadlock.Claim{Session: uint64(sl.sess.id), Writer: sl.writer(), Blocked: sl.blocked()})
				}
				g.Resources = append(g.Resources, dr)
			}
		}
		sh.mu.Unlock()
	}
	return g
}
