package engine

import (
	"strconv"

	"github.com/dflockd-ng/dflockd/vocab"
)

// forceRelease serves KindForceRelease: an operator takes a key from its
// holder (a stuck worker, one side of a deadlock) and the queue moves
// on. The holder is told nothing: its grant is gone, so its next renew or
// release answers as for a token that holds nothing, error (spec §B.1;
// HTTP 404 not_held). Expired holders are evicted first, as an acquire
// would, so they count as expired rather than released. The Result's Int
// is how many holders it released and Items their fences, in decimal,
// for the operator's log.
func (e *Engine) forceRelease(c *Command, fx *Effects) Result {
	ns := nsLock
	if c.Req.Op == vocab.OpSemRelease && !e.cfg.Profile.SharedLockSpace() {
		ns = nsSem
	}
	sh := e.shardFor(c.Req.Key)
	sh.lock(fx)
	defer sh.unlock()
	r := sh.lookupLocked(ns, c.Req.Key)
	if r == nil {
		return Result{Status: vocab.StatusOK, Kind: KindInt}
	}
	sh.evictExpiredLocked(r, c.At)
	var fences []string
	for sl := r.holders; sl != nil; {
		next := sl.next
		if c.Fence == 0 || sl.fence == c.Fence {
			if sh.obs != nil {
				sh.recordLocked(EventForceRelease, sl, c.At.Tick(), string(c.Req.Value))
			}
			fences = append(fences, strconv.FormatUint(sl.fence, 10))
			sh.dropHolderLocked(sl, evRelease, c.At)
		}
		sl = next
	}
	if len(fences) > 0 {
		sh.handOffLocked(r, c.At)
	}
	return Result{Status: vocab.StatusOK, Kind: KindInt, Int: int64(len(fences)), Items: fences}
}
