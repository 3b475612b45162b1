package engine

import (
	"math"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// counter is an int64 under a key of the counter key space (spec §B.5).
type counter struct {
	value      int64
	lastActive timerwheel.Tick
	tenant     *Tenant // whose key it is (tenant.go); nil: nobody's
}

// counterOp serves incr, decr, get and cset. Overflow is an error that
// leaves the value unchanged.
func (e *Engine) counterOp(id SessionID, r *vocab.Request, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(r.Key)
	sh.lock(fx)
	defer sh.unlock()
	c := sh.counters[string(r.Key)]
	if r.Op == vocab.OpGet {
		if c == nil {
			return Result{Status: vocab.StatusOK, Kind: KindInt} // absent reads as 0, not created
		}
		c.lastActive = now.Tick()
		return Result{Status: vocab.StatusOK, Kind: KindInt, Int: c.value}
	}
	var next int64
	cur := int64(0)
	if c != nil {
		cur = c.value
	}
	switch r.Op {
	case vocab.OpIncr:
		v, ok := addInt64(cur, r.N)
		if !ok {
			return status(vocab.StatusError)
		}
		next = v
	case vocab.OpDecr:
		if r.N == math.MinInt64 {
			return status(vocab.StatusError)
		}
		v, ok := addInt64(cur, -r.N)
		if !ok {
			return status(vocab.StatusError)
		}
		next = v
	case vocab.OpCSet:
		next = r.N
	}
	if c == nil {
		t := e.tenantOf(id)
		if !e.admitKey(t) {
			return status(vocab.StatusErrorMaxKeys)
		}
		c = &counter{tenant: t}
		sh.counters[string(r.Key)] = c
	}
	c.value, c.lastActive = next, now.Tick()
	if sh.watching() {
		sh.watchEventLocked(r.Op.String(), string(r.Key))
	}
	if r.Op == vocab.OpCSet {
		return status(vocab.StatusOK)
	}
	return Result{Status: vocab.StatusOK, Kind: KindInt, Int: next}
}

// addInt64 adds without wrapping.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, false
	}
	return s, true
}

// admitKey reserves one slot of --max-keys (counters, KV entries, lists
// and barriers together, spec §B.8); forgetKey gives it back.
func (e *Engine) admitKey(t *Tenant) bool {
	if !admitTenantKey(t) {
		return false
	}
	if e.cfg.MaxKeys <= 0 {
		e.rfKeys.Add(1)
		return true
	}
	if e.rfKeys.Add(1) > int64(e.cfg.MaxKeys) {
		e.rfKeys.Add(-1)
		forgetTenantKey(t)
		return false
	}
	return true
}

func (e *Engine) forgetKey(t *Tenant) {
	e.rfKeys.Add(-1)
	forgetTenantKey(t)
}
