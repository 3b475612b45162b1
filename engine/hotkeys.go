package engine

import "github.com/dflockd-ng/dflockd/internal/hotkeys"

// The observatory's hot keys: the lock, semaphore and read-write lock keys
// with the most grants and the most total wait, in bounded memory. A key
// is counted per kind (a KeyRef, as /v1/keys lists keys): in v2 a lock
// "a" and a semaphore "a" are different resources, and get a row each. Each
// shard keeps two Space-Saving sketches (internal/hotkeys) of its own
// keys, updated under the shard lock at each grant and timed-out wait, so
// recording takes no lock of its own; a key lives in one shard, so the
// shards' tops merge by plain sorting. Only with the observatory on
// (Config.Events > 0): with it off a shard has no obs, and the request
// path pays a nil check.

// HotKeysTracked is how many keys the sketches count in all, split over
// the shards (at least minHotPerShard each): a key whose grants (or wait)
// exceed its shard's total over its shard's share is always among them.
const HotKeysTracked = 1024

const minHotPerShard = 16

type hotSketches struct {
	grants *hotkeys.Sketch[KeyRef] // weight 1 per grant
	wait   *hotkeys.Sketch[KeyRef] // weight: ms waited, at grant or timeout
}

func newHotSketches(shards int) hotSketches {
	k := max(minHotPerShard, HotKeysTracked/max(shards, 1))
	return hotSketches{grants: hotkeys.New(k, compareRefs), wait: hotkeys.New(k, compareRefs)}
}

// hotLocked counts a wait's end on key: a grant if granted; ms waited (-1:
// unknown, a claim restored from a snapshot).
func (o *shardObs) hotLocked(key KeyRef, granted bool, ms int64) {
	if granted {
		o.hot.grants.Add(key, 1)
	}
	if ms > 0 {
		o.hot.wait.Add(key, uint64(ms))
	}
}

// HotKey is one key of a hot-key list, named with its kind: Count is an
// upper bound of its grants (or ms waited), Count-Err a lower bound.
type HotKey = hotkeys.Entry[KeyRef]

// HotKeys is what HotKeys reports.
type HotKeys struct {
	ByGrants, ByWait []HotKey
	// Grants and WaitMs are the totals the sketches saw; Tracked how
	// many keys they count at most (each list's possible error is at
	// most its total over a shard's share of Tracked).
	Grants, WaitMs uint64
	Tracked        int
}

// HotKeys returns the n keys with the most grants and the n with the most
// total wait, highest first; empty with the observatory off.
func (e *Engine) HotKeys(n int) HotKeys {
	var h HotKeys
	for i := range e.shards {
		sh := &e.shards[i]
		if sh.obs == nil {
			return h
		}
		sh.mu.Lock()
		hs := sh.obs.hot
		h.ByGrants = hs.grants.Top(n, h.ByGrants)
		h.ByWait = hs.wait.Top(n, h.ByWait)
		h.Grants += hs.grants.Total()
		h.WaitMs += hs.wait.Total()
		h.Tracked += hs.grants.Capacity()
		sh.mu.Unlock()
	}
	for _, l := range []*[]HotKey{&h.ByGrants, &h.ByWait} {
		hotkeys.SortTop(*l, compareRefs)
		if len(*l) > n {
			*l = (*l)[:n]
		}
	}
	return h
}
