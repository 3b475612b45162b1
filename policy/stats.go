package policy

import "github.com/dflockd-ng/dflockd/vocab"

// ScopeStats removes from st what the identity may not observe: every
// entry of a key (or a subscription pattern) outside its observe rules.
// st is changed in place; its arrays keep their order.
func (id *Identity) ScopeStats(st *vocab.Stats) {
	if id.everything {
		return
	}
	see := func(key string) bool { return id.Allows(Observe, []byte(key)) }
	seePattern := func(p string) bool { return id.AllowsPattern(Observe, []byte(p)) }
	st.Locks = keep(st.Locks, func(x vocab.LockStat) bool { return see(x.Key) })
	st.Semaphores = keep(st.Semaphores, func(x vocab.SemStat) bool { return see(x.Key) })
	st.RWLocks = keep(st.RWLocks, func(x vocab.RWStat) bool { return see(x.Key) })
	st.IdleLocks = keep(st.IdleLocks, func(x vocab.IdleStat) bool { return see(x.Key) })
	st.IdleSemaphores = keep(st.IdleSemaphores, func(x vocab.IdleStat) bool { return see(x.Key) })
	st.Counters = keep(st.Counters, func(x vocab.CounterStat) bool { return see(x.Key) })
	st.KVEntries = keep(st.KVEntries, func(x vocab.KVStat) bool { return see(x.Key) })
	st.Lists = keep(st.Lists, func(x vocab.ListStat) bool { return see(x.Key) })
	st.SignalChannels = keep(st.SignalChannels, func(x vocab.SignalStat) bool { return seePattern(x.Pattern) })
	st.WatchChannels = keep(st.WatchChannels, func(x vocab.WatchStat) bool { return seePattern(x.Pattern) })
	st.Barriers = keep(st.Barriers, func(x vocab.BarrierStat) bool { return see(x.Key) })
}

// keep filters s in place, keeping a non-nil empty array as empty (the
// document shows [] for it).
func keep[T any](s []T, ok func(T) bool) []T {
	out := s[:0]
	for _, x := range s {
		if ok(x) {
			out = append(out, x)
		}
	}
	return out
}
