package parse

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// The documents of spec §F.1, byte for byte, for an empty state and for
// one entry per array: v1 and v2 show exactly five keys (no fences, none
// of the redis-feats arrays); rf shows its line's keys in its order, with
// signal_channels and watch_channels null when empty.
func TestAppendStatsShapes(t *testing.T) {
	empty := &vocab.Stats{
		Locks: []vocab.LockStat{}, Semaphores: []vocab.SemStat{}, RWLocks: []vocab.RWStat{}, IdleLocks: []vocab.IdleStat{},
		IdleSemaphores: []vocab.IdleStat{}, Counters: []vocab.CounterStat{}, KVEntries: []vocab.KVStat{}, Lists: []vocab.ListStat{},
		SignalChannels: []vocab.SignalStat{}, WatchChannels: []vocab.WatchStat{}, Barriers: []vocab.BarrierStat{},
	}
	full := &vocab.Stats{
		Connections:    2,
		Locks:          []vocab.LockStat{{Key: "l", OwnerConnID: 1, LeaseExpiresIn: 1.5, Waiters: 1, Fence: 9}},
		Semaphores:     []vocab.SemStat{{Key: "s", Limit: 3, Holders: 1}},
		RWLocks:        []vocab.RWStat{{Key: "rw", Readers: 2, Fence: 7}},
		IdleLocks:      []vocab.IdleStat{{Key: "i", IdleS: 2}},
		IdleSemaphores: []vocab.IdleStat{},
		Counters:       []vocab.CounterStat{{Key: "c", Value: -1, IdleS: 1}},
		KVEntries:      []vocab.KVStat{{Key: "k", ValueLen: 3, TTL: 4}},
		Lists:          []vocab.ListStat{{Key: "q", Len: 1}},
		SignalChannels: []vocab.SignalStat{{Pattern: "a.*", Listeners: 1}},
		WatchChannels:  []vocab.WatchStat{{Pattern: "k", Watchers: 1}},
		Barriers:       []vocab.BarrierStat{},
	}
	for _, c := range []struct {
		p    vocab.Profile
		st   *vocab.Stats
		want string
	}{
		{vocab.ProfileV2, empty, `{"connections":0,"locks":[],"semaphores":[],"idle_locks":[],"idle_semaphores":[]}`},
		{vocab.ProfileV1, empty, `{"connections":0,"locks":[],"semaphores":[],"idle_locks":[],"idle_semaphores":[]}`},
		{vocab.ProfileV2, full, `{"connections":2,"locks":[{"key":"l","owner_conn_id":1,"lease_expires_in_s":1.5,"waiters":1}],` +
			`"semaphores":[{"key":"s","limit":3,"holders":1,"waiters":0}],"idle_locks":[{"key":"i","idle_s":2}],"idle_semaphores":[]}`},
		{vocab.ProfileRF, empty, `{"connections":0,"locks":[],"semaphores":[],"rw_locks":[],"idle_locks":[],"idle_semaphores":[],` +
			`"counters":[],"kv_entries":[],"lists":[],"signal_channels":null,"watch_channels":null,"barriers":[]}`},
		{vocab.ProfileRF, full, `{"connections":2,"locks":[{"key":"l","owner_conn_id":1,"lease_expires_in_s":1.5,"waiters":1,"fence":9}],` +
			`"semaphores":[{"key":"s","limit":3,"holders":1,"waiters":0}],"rw_locks":[{"key":"rw","readers":2,"writer":false,"fence":7,"waiters":0}],` +
			`"idle_locks":[{"key":"i","idle_s":2}],"idle_semaphores":[],"counters":[{"key":"c","value":-1,"idle_s":1}],` +
			`"kv_entries":[{"key":"k","value_len":3,"ttl":4,"idle_s":0}],"lists":[{"key":"q","len":1,"idle_s":0}],` +
			`"signal_channels":[{"pattern":"a.*","listeners":1}],"watch_channels":[{"pattern":"k","watchers":1}],"barriers":[]}`},
	} {
		if got := string(AppendStats([]byte("ok "), c.st, c.p)); got != "ok "+c.want {
			t.Errorf("%v:\n got %s\nwant ok %s", c.p, got, c.want)
		}
	}
}
