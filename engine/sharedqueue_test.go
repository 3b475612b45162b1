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
	sh := h.eng.shardFor([]byte("k"))
	res := sh.res[nsLock].getString("k")
	if sh.queueOf(res) != &noWaiters || res.waiting() {
		t.Fatal("a key without waiters has a queue of its own")
	}
	h.do(b, "l", "k", "5 10") // waits
	q := sh.queueOf(res)
	if q == &noWaiters || q.n != 1 || !res.waiting() {
		t.Fatalf("the waiter is not in a queue of the key's own (shared: %v, n %d)", q == &noWaiters, q.n)
	}
	h.advance(6e9) // the waiter times out
	if sh.queueOf(res) != q || q.n != 0 || res.waiting() {
		t.Fatalf("after the timeout: same queue %v, n %d, waiting %v", sh.queueOf(res) == q, q.n, res.waiting())
	}
	// The GC forgets the queue with its key, once the lease has ended and
	// the key has stayed idle.
	h.advance(20e9)
	h.advance(DefaultGCIdle)
	h.gc()
	if sh.res[nsLock].getString("k") != nil || len(sh.queues) != 0 {
		t.Fatalf("after the GC: key kept %v, %d queues kept", sh.res[nsLock].getString("k") != nil, len(sh.queues))
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
