package engine

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// kvEntry is a value of the KV key space (spec §B.6). Its value string is
// never mutated in place (kset stores a new string), so a Result may carry
// it after the shard lock is released.
type kvEntry struct {
	timer      timerwheel.Node // TTL expiry
	key        string
	value      string
	lastActive timerwheel.Tick
	// hasTTL: the entry expires at timer's deadline. (Not timer.Armed():
	// a timer Advance has collected is unarmed until it fires.)
	hasTTL bool
	// ver changes with every write, so a collected TTL timer can tell
	// that the entry was set again meanwhile (advance.go).
	ver uint32
	// tenant is whose key it is (tenant.go); nil: nobody's.
	tenant *Tenant
}

// expired reports whether a TTL'd entry is past its deadline (the timer
// may not have fired yet: reads expire lazily too).
func (kv *kvEntry) expired(now timerwheel.Instant) bool {
	return kv.hasTTL && now.Passed(kv.timer.Deadline())
}

// kvOp serves kset, kget, kdel and kcas.
func (e *Engine) kvOp(id SessionID, r *vocab.Request, now timerwheel.Instant, fx *Effects) Result {
	sh := e.shardFor(r.Key)
	sh.lock(fx)
	defer sh.unlock()
	kv := sh.kv[string(r.Key)]
	if kv != nil && kv.expired(now) {
		sh.deleteKVLocked(kv)
		kv = nil
	}
	switch r.Op {
	case vocab.OpKGet:
		if kv == nil {
			return status(vocab.StatusNil)
		}
		kv.lastActive = now.Tick()
		return Result{Status: vocab.StatusOK, Kind: KindValue, Value: kv.value}
	case vocab.OpKDel:
		if kv != nil {
			sh.deleteKVLocked(kv)
		}
		if sh.watching() {
			sh.watchEventLocked("kdel", string(r.Key)) // even when absent (§B.10)
		}
		return status(vocab.StatusOK)
	case vocab.OpKCAS:
		switch {
		case len(r.Old) == 0 && kv != nil:
			return status(vocab.StatusCASConflict)
		case len(r.Old) != 0 && (kv == nil || kv.value != string(r.Old)):
			return status(vocab.StatusCASConflict)
		}
	}
	// kset, or a kcas whose expectation held.
	if kv == nil {
		t := e.tenantOf(id)
		if !e.admitKey(t) {
			return status(vocab.StatusErrorMaxKeys)
		}
		kv = &kvEntry{key: string(r.Key), tenant: t}
		kv.timer.Kind = timerKV
		sh.kv[kv.key] = kv
	}
	kv.value = string(r.Value)
	kv.lastActive = now.Tick()
	kv.ver++
	kv.hasTTL = r.TTL > 0
	if kv.hasTTL {
		sh.armLocked(&kv.timer, now.After(r.TTL*1000))
	} else {
		sh.cancelLocked(&kv.timer)
	}
	sh.watchEventLocked(r.Op.String(), kv.key) // kset, or a kcas that succeeded
	return status(vocab.StatusOK)
}

func (sh *shard) deleteKVLocked(kv *kvEntry) {
	sh.cancelLocked(&kv.timer)
	delete(sh.kv, kv.key)
	sh.eng.forgetKey(kv.tenant)
}
