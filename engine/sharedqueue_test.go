package engine

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// A key gets a queue of its own with its first waiter and keeps it; the
// shared empty queue of the keys that never had one stays empty through
// waits, grants, timeouts and releases.
func TestQueueIsOwnedFromTheFirstWaiter(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	if r := h.do(a, "l", "k", "0 10"); r.Status != vocab.StatusOK {
		t.Fatalf("lock: %+v", r)
	}
	res := h.eng.shardFor([]byte("k")).res[nsLock].getString("k")
	if res.queue != &noWaiters {
		t.Fatal("a key without waiters has a queue of its own")
	}
	h.do(b, "l", "k", "5 10") // waits
	q := res.queue
	if q == &noWaiters || q.n != 1 {
		t.Fatalf("the waiter is not in a queue of the key's own (shared: %v, n %d)", q == &noWaiters, q.n)
	}
	h.advance(6e9) // the waiter times out
	if res.queue != q || q.n != 0 {
		t.Fatalf("after the timeout: same queue %v, n %d", res.queue == q, q.n)
	}
	h.do(a, "l", "other", "0 10")
	if noWaiters != (slotList{}) {
		t.Fatalf("the shared empty queue was written: %+v", noWaiters)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("appending to the shared empty queue did not panic")
		}
	}()
	noWaiters.pushBack(&slot{})
}
