package engine

import "github.com/dflockd-ng/dflockd/timerwheel"

// The wait and hold histograms behind dflockd_lock_wait_seconds and
// dflockd_lock_hold_seconds. They are computed from the times the engine
// is given (Command.At), never from a clock, so replicas that apply the
// same log count the same; and they cost the request path a few compares
// and increments under the shard lock it holds anyway: no allocation, no
// atomic, no map.
//
// A claim's start (queued, or granted) is kept in its timer node's Mark:
// the low 32 bits of the tick (ms) it entered its state, in what would be
// padding, so the slot stays in its size class. Differences are taken
// modulo 2^32, right for spans under ~49.7 days (a longer hold lands in a
// lower bucket). Slots restored from a snapshot carry no start (the
// snapshot format has none) and are left out until their next grant.

// LatencyBoundsMs are the histograms' bucket upper bounds in milliseconds
// (the engine's tick); a last bucket holds the rest (+Inf).
var LatencyBoundsMs = [...]int64{1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 1800000}

// Latency is one histogram: Counts[i] observations at most
// LatencyBoundsMs[i] ms and above the bound before (not cumulative); the
// last entry counts those above every bound.
type Latency struct {
	Counts [len(LatencyBoundsMs) + 1]uint64
	SumMs  uint64
}

// Count is the number of observations.
func (h *Latency) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

func (h *Latency) observe(ms int64) {
	i := 0
	// Linear: most waits and holds are short and stop in the first few.
	for i < len(LatencyBoundsMs) && ms > LatencyBoundsMs[i] {
		i++
	}
	h.Counts[i]++
	h.SumMs += uint64(ms)
}

func (h *Latency) add(o *Latency) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.SumMs += o.SumMs
}

// stamp records that sl enters its state (queued or granted) at now.
func stamp(sl *slot, now timerwheel.Instant) {
	sl.timer.Mark = uint32(now.Tick())
	sl.set(flagUntimed, false)
}

// sinceStamp is how long sl has been in its state, in ms.
func sinceStamp(sl *slot, now timerwheel.Instant) int64 {
	return int64(uint32(now.Tick()) - sl.timer.Mark)
}

// waitEndedLocked counts a wait that ended in a grant (granted) or a
// timeout: zero for a grant on the fast path (the slot never queued). The
// observatory's hot keys (hotkeys.go) count it too.
func (sh *shard) waitEndedLocked(sl *slot, now timerwheel.Instant, granted bool) {
	ms := int64(0)
	switch {
	case sl.state() != slotWaiting:
	case sl.untimed():
		ms = -1
	default:
		ms = sinceStamp(sl, now)
	}
	if ms >= 0 {
		sh.counts.wait.observe(ms)
	}
	if o := sh.obs; o != nil {
		o.hotLocked(KeyRef{Key: sl.res.key(), Kind: sh.eng.kindOf(sl.res.namespace(), sl.res)}, granted, ms)
	}
}

// holdEndedLocked counts a hold that ended: release, expiry, disconnect,
// resignation or force release.
func (sh *shard) holdEndedLocked(sl *slot, now timerwheel.Instant) {
	if !sl.untimed() {
		sh.counts.hold.observe(sinceStamp(sl, now))
	}
}

// Latencies sums the shards' wait and hold histograms.
func (e *Engine) Latencies() (wait, hold Latency) {
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		wait.add(&sh.counts.wait)
		hold.add(&sh.counts.hold)
		sh.mu.Unlock()
	}
	return wait, hold
}
