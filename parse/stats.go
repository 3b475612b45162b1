package parse

import (
	"encoding/json"

	"github.com/valyala/bytebufferpool"

	"github.com/dflockd-ng/dflockd/vocab"
)

// statsDocRF is the document of dflockd's redis-feats line: its keys in
// its order. That line sends signal_channels and watch_channels as null
// when there are none (nil slices), every other array as [].
type statsDocRF struct {
	Connections    int                 `json:"connections"`
	Locks          []vocab.LockStat    `json:"locks"`
	Semaphores     []vocab.SemStat     `json:"semaphores"`
	RWLocks        []vocab.RWStat      `json:"rw_locks"`
	IdleLocks      []vocab.IdleStat    `json:"idle_locks"`
	IdleSemaphores []vocab.IdleStat    `json:"idle_semaphores"`
	Counters       []vocab.CounterStat `json:"counters"`
	KVEntries      []vocab.KVStat      `json:"kv_entries"`
	Lists          []vocab.ListStat    `json:"lists"`
	SignalChannels []vocab.SignalStat  `json:"signal_channels"`
	WatchChannels  []vocab.WatchStat   `json:"watch_channels"`
	Barriers       []vocab.BarrierStat `json:"barriers"`
	Cluster        *vocab.ClusterStats `json:"cluster,omitempty"`
}

// statsDocV2 is the document of dflockd v1.10 and v2: these five keys
// only (spec §F.1).
type statsDocV2 struct {
	Connections    int              `json:"connections"`
	Locks          []vocab.LockStat `json:"locks"`
	Semaphores     []vocab.SemStat  `json:"semaphores"`
	IdleLocks      []vocab.IdleStat `json:"idle_locks"`
	IdleSemaphores []vocab.IdleStat `json:"idle_semaphores"`
	// Cluster: a cluster member's extra object (V2C).
	Cluster *vocab.ClusterStats `json:"cluster,omitempty"`
}

// AppendStats appends the stats document of profile p (one line, no LF):
// v1 and v2 the five keys of dflockd v1.10 and v2, rf that line's
// document. Only rf shows the fences of locks. (The state of the
// redis-feats primitives, which every profile serves, is in the rf
// document only, as in dflockd; the fence allocator's is in /metrics.)
func AppendStats(dst []byte, st *vocab.Stats, p vocab.Profile) []byte {
	var doc any
	if p == vocab.ProfileRF {
		doc = &statsDocRF{
			Connections: st.Connections, Locks: st.Locks, Semaphores: st.Semaphores, RWLocks: st.RWLocks,
			IdleLocks: st.IdleLocks, IdleSemaphores: st.IdleSemaphores, Counters: st.Counters,
			KVEntries: st.KVEntries, Lists: st.Lists, SignalChannels: nilIfEmpty(st.SignalChannels),
			WatchChannels: nilIfEmpty(st.WatchChannels), Barriers: st.Barriers, Cluster: st.Cluster,
		}
	} else {
		doc = &statsDocV2{Connections: st.Connections, Locks: withoutFences(st.Locks), Semaphores: st.Semaphores,
			IdleLocks: st.IdleLocks, IdleSemaphores: st.IdleSemaphores, Cluster: st.Cluster}
	}
	buf := bytebufferpool.Get()
	defer bytebufferpool.Put(buf)
	if err := json.NewEncoder(buf).Encode(doc); err != nil {
		panic("parse: stats document does not encode: " + err.Error())
	}
	b := buf.B
	return append(dst, b[:len(b)-1]...) // Encode ends with LF; the reply adds its own
}

// nilIfEmpty makes an empty array encode as null.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// withoutFences returns locks with their fences zeroed (omitted), copying
// only if one is set.
func withoutFences(locks []vocab.LockStat) []vocab.LockStat {
	for i := range locks {
		if locks[i].Fence != 0 {
			out := make([]vocab.LockStat, len(locks))
			for j, l := range locks {
				l.Fence = 0
				out[j] = l
			}
			return out
		}
	}
	return locks
}

// AppendStatsReply appends the stats command's reply: "ok <document>\n".
func AppendStatsReply(dst []byte, st *vocab.Stats, p vocab.Profile) []byte {
	return append(AppendStats(appendWord(dst, vocab.StatusOK), st, p), '\n')
}
