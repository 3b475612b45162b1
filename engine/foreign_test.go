package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// One session parks several tagged acquires; each delivery carries its tag,
// in FIFO order with a dflockd waiter between them.
func TestTaggedAcquiresShareTheFIFO(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	first := h.acquireTagged(a, []byte("k"), 5000, false, 0)
	if first.Status != vocab.StatusOK || first.Kind != KindGrant {
		t.Fatalf("free lock: %+v", first)
	}
	if r := h.acquireTagged(b, []byte("k"), 0, false, 0); r.Status != vocab.StatusTimeout {
		t.Fatalf("try on a held lock: %+v", r)
	}
	if r := h.acquireTagged(b, []byte("k"), 0, true, 7); !r.Blocked {
		t.Fatalf("wait: %+v", r)
	}
	if r := h.do(c, "l", "k", "60 10"); !r.Blocked {
		t.Fatalf("dflockd waiter: %+v", r)
	}
	if r := h.acquireTagged(b, []byte("k"), 0, true, 8); !r.Blocked {
		t.Fatalf("second wait: %+v", r)
	}
	if f, ok := h.holderFence([]byte("k")); !ok || f != first.Token.Fence {
		t.Fatalf("HolderFence = %d, %v; want %d", f, ok, first.Token.Fence)
	}
	if released, tag := h.releaseOwn(a, []byte("k")); !released || tag != 0 {
		t.Fatalf("ReleaseOwn(holder) = %v, %d", released, tag)
	}
	g := h.wantDelivered(b, vocab.StatusOK)
	if g.Tag != 7 || g.Token.Fence <= first.Token.Fence || g.Lease != DefaultLease.Milliseconds()/1000 {
		t.Fatalf("first tagged grant %+v", g)
	}
	if held, waiting := h.eng.LockCounts(); held != 1 || waiting != 2 {
		t.Fatalf("LockCounts = %d, %d", held, waiting)
	}
	// Renew by fence: only the holder session, only with its fence.
	if h.renewFence(c, []byte("k"), g.Token.Fence, 1000) || h.renewFence(b, []byte("k"), g.Token.Fence+1, 1000) {
		t.Fatal("RenewFence accepted a non-holder or a wrong fence")
	}
	if !h.renewFence(b, []byte("k"), g.Token.Fence, 1000) {
		t.Fatal("RenewFence refused the holder")
	}
	h.advance(999 * time.Millisecond)
	h.wantNothing(c)
	h.advance(time.Millisecond) // the renewed 1 s lease ends: c is next
	h.wantDelivered(c, vocab.StatusOK)
	if released, _ := h.releaseOwn(b, []byte("k")); released {
		t.Fatal("ReleaseOwn released a lock b no longer holds")
	}
}

func TestReleaseOwnWithdrawsAndDrainKeepsTags(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	h.do(a, "l", "k", "0 10")
	h.acquireTagged(b, []byte("k"), 0, true, 3)
	h.acquireTagged(b, []byte("k"), 0, true, 4)
	if released, tag := h.releaseOwn(b, []byte("k")); released || tag != 3 {
		t.Fatalf("ReleaseOwn(waiter) = %v, %d; want false, 3", released, tag)
	}
	h.drain()
	if r := h.wantDelivered(b, vocab.StatusError); r.Tag != 4 {
		t.Fatalf("drained delivery %+v, want tag 4", r)
	}
	if released, tag := h.releaseOwn(b, []byte("nokey")); released || tag != 0 {
		t.Fatal("ReleaseOwn on an unknown key")
	}
	if _, ok := h.holderFence([]byte("nokey")); ok {
		t.Fatal("HolderFence on an unknown key")
	}
}

// A closed session's tagged waits leave the queue without deliveries.
func TestCloseCancelsTaggedWaits(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	h.acquireTagged(a, []byte("k"), 0, false, 0)
	h.acquireTagged(b, []byte("k"), 0, true, 1)
	h.acquireTagged(b, []byte("k"), 0, true, 2)
	h.close(b)
	if _, waiting := h.eng.LockCounts(); waiting != 0 {
		t.Fatalf("%d waiters after Close", waiting)
	}
	h.close(a)
	if held, _ := h.eng.LockCounts(); held != 0 {
		t.Fatalf("%d held after Close", held)
	}
	h.wantNothing(b)
}
