package httpapi

import (
	"net/http"
	"strconv"

	"github.com/dflockd-ng/dflockd/engine"
)

// GET /v1/hotkeys?limit=N: the observatory's hot keys (engine/hotkeys.go)
// and the wait and hold histograms behind dflockd_lock_wait_seconds and
// dflockd_lock_hold_seconds, for the page's "Hot" panel and dflockctl top.

const (
	defaultHotKeys = 10
	maxHotKeys     = 100
)

type (
	hotKeysReply struct {
		// Events: the observatory records (--observatory-events); hot
		// keys are counted only then, the histograms always.
		Events   bool         `json:"events"`
		ByGrants []hotKeyJSON `json:"by_grants"`
		ByWait   []hotKeyJSON `json:"by_wait"`
		Grants   uint64       `json:"grants"`
		WaitMs   uint64       `json:"wait_ms"`
		Tracked  int          `json:"tracked"`
		Latency  latencyJSON  `json:"latency"`
	}
	// hotKeyJSON: count is an upper bound of the key's grants (or ms
	// waited), count - error a lower bound. kind is /v1/keys's (lock,
	// semaphore, rwlock): a lock and a semaphore of one name are two
	// resources, two rows.
	hotKeyJSON struct {
		Key   string `json:"key"`
		Kind  string `json:"kind"`
		Count uint64 `json:"count"`
		Error uint64 `json:"error"`
	}
	latencyJSON struct {
		BoundsMs []int64       `json:"bounds_ms"`
		Wait     histogramJSON `json:"wait"`
		Hold     histogramJSON `json:"hold"`
	}
	// histogramJSON: counts[i] observations at most bounds_ms[i] and above
	// the bound before; the last entry, one more than the bounds, those
	// above every bound.
	histogramJSON struct {
		Counts []uint64 `json:"counts"`
		Count  uint64   `json:"count"`
		SumMs  uint64   `json:"sum_ms"`
	}
)

func hotList(es []engine.HotKey, sc *scope) []hotKeyJSON {
	out := make([]hotKeyJSON, 0, len(es))
	for _, e := range es {
		if !sc.sees(e.Key.Key) {
			continue
		}
		out = append(out, hotKeyJSON{Key: e.Key.Key, Kind: e.Key.Kind.String(), Count: e.Count, Error: e.Err})
	}
	return out
}

func histogram(h *engine.Latency) histogramJSON {
	return histogramJSON{Counts: h.Counts[:], Count: h.Count(), SumMs: h.SumMs}
}

// listHotKeys is GET /v1/hotkeys.
func (a *API) listHotKeys(w http.ResponseWriter, r *http.Request) {
	n := defaultHotKeys
	if l := r.URL.Query().Get("limit"); l != "" {
		v, err := strconv.Atoi(l)
		if err != nil || v < 1 || v > maxHotKeys {
			writeError(w, http.StatusBadRequest, codeBadRequest, "limit must be 1.."+strconv.Itoa(maxHotKeys))
			return
		}
		n = v
	}
	var wait, hold engine.Latency
	reply := hotKeysReply{ByGrants: []hotKeyJSON{}, ByWait: []hotKeyJSON{}}
	if eng := a.hub.Engine(); eng != nil { // nil: a cluster member before its first entry
		hk := eng.HotKeys(n)
		reply.Events = eng.EventsOn()
		sc := observeScope(r)
		reply.ByGrants, reply.ByWait = hotList(hk.ByGrants, sc), hotList(hk.ByWait, sc)
		if sc == nil {
			// The totals and histograms are every key's: not a scoped
			// caller's to see.
			reply.Grants, reply.WaitMs, reply.Tracked = hk.Grants, hk.WaitMs, hk.Tracked
			wait, hold = eng.Latencies()
		}
	}
	reply.Latency = latencyJSON{BoundsMs: engine.LatencyBoundsMs[:], Wait: histogram(&wait), Hold: histogram(&hold)}
	writeJSON(w, http.StatusOK, reply)
}
