package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Hot keys count grants and the time waited per key, across shards; with
// fewer keys than the sketches hold, exactly.
func TestHotKeys(t *testing.T) {
	h := newHarness(t, Config{Events: 1024, Shards: 4})
	a, b := h.session(), h.session()
	for range 3 {
		h.do(a, "r", "hot", wantGrant(t, h.do(a, "l", "hot", "0 30"), 30))
	}
	h.do(a, "r", "warm", wantGrant(t, h.do(a, "l", "warm", "0 30"), 30))
	tk := wantGrant(t, h.do(a, "l", "contended", "0 30"), 30)
	wantBlocked(t, h.do(b, "l", "contended", "10 30"))
	h.advance(250 * time.Millisecond)
	h.do(a, "r", "contended", tk) // b waited 250 ms, then got it
	h.wantDelivered(b, vocab.StatusOK)
	wantBlocked(t, h.do(a, "l", "contended", "1 30"))
	h.advance(time.Second) // a's wait times out after 1000 ms
	h.wantDelivered(a, vocab.StatusTimeout)

	hk := h.eng.HotKeys(2)
	if len(hk.ByGrants) != 2 || hk.ByGrants[0] != (HotKey{Key: KeyRef{"hot", KeyLock}, Count: 3}) || hk.ByGrants[1] != (HotKey{Key: KeyRef{"contended", KeyLock}, Count: 2}) {
		t.Fatalf("by grants: %+v", hk.ByGrants)
	}
	if len(hk.ByWait) != 1 || hk.ByWait[0] != (HotKey{Key: KeyRef{"contended", KeyLock}, Count: 1250}) {
		t.Fatalf("by wait: %+v", hk.ByWait)
	}
	if hk.Grants != 6 || hk.WaitMs != 1250 || hk.Tracked < HotKeysTracked {
		t.Fatalf("totals %d grants, %d ms, %d tracked", hk.Grants, hk.WaitMs, hk.Tracked)
	}
	if off := newHarness(t, Config{}); len(off.eng.HotKeys(5).ByGrants) != 0 {
		t.Fatal("hot keys without the observatory")
	}
}

// A lock and a semaphore of one name are two resources in v2: each gets a
// row of its own, with its own counts, named with its kind.
func TestHotKeysPerKind(t *testing.T) {
	h := newHarness(t, Config{Events: 1024, Shards: 4})
	a := h.session()
	for range 2 {
		h.do(a, "r", "x", wantGrant(t, h.do(a, "l", "x", "0 30"), 30))
	}
	for range 3 {
		h.do(a, "sr", "x", wantGrant(t, h.do(a, "sl", "x", "0 3 30"), 30))
	}
	hk := h.eng.HotKeys(5)
	want := []HotKey{{Key: KeyRef{"x", KeySemaphore}, Count: 3}, {Key: KeyRef{"x", KeyLock}, Count: 2}}
	if len(hk.ByGrants) != len(want) || hk.ByGrants[0] != want[0] || hk.ByGrants[1] != want[1] {
		t.Fatalf("by grants: %+v, want %+v", hk.ByGrants, want)
	}
}
