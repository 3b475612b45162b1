//go:build !race

package engine

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// The uncontended acquire/release of an existing key must not allocate:
// slots come from shard free lists, lookups use m[string(b)], and results
// are returned by value. With the observatory on too: its ring is
// preallocated and its slot-times map reuses its room (events.go).
func TestAcquireReleaseDoesNotAllocate(t *testing.T) {
	for _, cfg := range []Config{{}, {Events: 4096}} {
		acquireReleaseAllocs(t, cfg)
	}
}

func acquireReleaseAllocs(t *testing.T, cfg Config) {
	h := newHarness(t, cfg)
	s := h.session()
	key := []byte("alloc-key")
	lock := vocab.Request{Op: vocab.OpLock, Key: key, Timeout: 0, Lease: 10}
	rel := vocab.Request{Op: vocab.OpRelease, Key: key}
	var tok [32]byte
	cycle := func() {
		r := h.apply(s, &lock)
		if r.Status != vocab.StatusOK {
			t.Fatalf("lock: %+v", r)
		}
		rel.Token = r.Token.Append(tok[:0])
		if r := h.apply(s, &rel); r.Status != vocab.StatusOK {
			t.Fatalf("release: %+v", r)
		}
	}
	for i := 0; i < 100; i++ { // create the key, warm the free list and claims
		cycle()
	}
	if n := testing.AllocsPerRun(1000, cycle); n != 0 {
		t.Fatalf("acquire+release (events %d) allocates %.1f times per cycle", cfg.Events, n)
	}
	if cfg.Events > 0 && h.eng.EventHead(h.eng.shardFor(key).index) < 2200 {
		t.Fatal("the events were not recorded")
	}
}

func TestCounterAndKVReadsDoNotAllocate(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.session()
	incr := vocab.Request{Op: vocab.OpIncr, Key: []byte("ctr"), N: 1}
	get := vocab.Request{Op: vocab.OpGet, Key: []byte("ctr")}
	kget := vocab.Request{Op: vocab.OpKGet, Key: []byte("kv")}
	h.do(s, "kset", "kv", "some value")
	h.apply(s, &incr)
	for name, req := range map[string]*vocab.Request{"incr": &incr, "get": &get, "kget hit": &kget} {
		if n := testing.AllocsPerRun(1000, func() {
			if r := h.apply(s, req); r.Status != vocab.StatusOK {
				t.Fatalf("%s: %+v", name, r)
			}
		}); n != 0 {
			t.Errorf("%s allocates %.1f times", name, n)
		}
	}
}
