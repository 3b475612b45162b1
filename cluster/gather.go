package cluster

import "time"

// Group commit proposes what gathered while the previous entry was on its
// way the moment that entry applies. Under a steady load that splits the
// clients in two: those whose requests gathered meanwhile, proposed at
// once in a small entry, and those still receiving their answers, whose
// next requests arrive a moment later and wait a whole commit round for
// the entry after. With 50 clients at depth 1 the entries averaged 22 ops
// of a possible 50, so every request paid for twice the entries (fsyncs on
// every member, replication, apply) that it needed.
//
// gatherer holds a small entry back briefly when recent entries were
// larger: until the queue holds three quarters of the crowd (the largest
// recent entry, decaying by an eighth per entry, so that it follows a load
// that falls), or until a quarter of the last commit round has passed, at
// most maxGather. A lone client's entries are never held (its crowd is
// itself), and the wait is bounded by what the commit itself takes.
type gatherer struct {
	crowd int       // ops in the largest recent entry, decaying
	until time.Time // end of the current hold, zero when none
}

// maxGather bounds one hold.
const maxGather = time.Millisecond

// hold reports whether nops queued ops should wait for more, and until
// when; commit is the last entry's propose-to-apply time (0: unknown).
func (g *gatherer) hold(nops int, now time.Time, commit time.Duration) (bool, time.Time) {
	if 4*nops >= 3*g.crowd {
		return false, time.Time{}
	}
	if g.until.IsZero() {
		g.until = now.Add(min(commit/4, maxGather))
	}
	if !now.Before(g.until) {
		return false, time.Time{}
	}
	return true, g.until
}

// proposed records an entry of nops ops: the hold, if any, is over.
func (g *gatherer) proposed(nops int) {
	g.crowd = max(nops, g.crowd-(g.crowd+7)/8)
	g.until = time.Time{}
}
