package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

func (h *harness) cancel(s SessionID, tag uint32) int64 {
	h.t.Helper()
	r := h.run(Command{Kind: KindCancel, Session: s, Tag: tag})
	if r.Status != vocab.StatusOK || r.Kind != KindInt {
		h.t.Fatalf("cancel: %+v", r)
	}
	return r.Int
}

// A withdrawn wait leaves its queue without a reply: the next release
// goes to whoever queued after it, and its timeout never fires.
func TestCancelParkedAcquire(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantBlocked(t, h.do(b, "l", "k", "5 10"))
	wantBlocked(t, h.do(c, "l", "k", "5 20"))
	if n := h.cancel(b, 0); n != 1 {
		t.Fatalf("cancel of a parked l withdrew %d", n)
	}
	if n := h.cancel(b, 0); n != 0 {
		t.Fatalf("second cancel withdrew %d", n)
	}
	wantStatus(t, h.do(a, "r", "k", tk), vocab.StatusOK)
	h.wantNothing(b)
	if g := h.wantDelivered(c, vocab.StatusOK); g.Lease != 20 {
		t.Fatalf("c's grant %+v", g)
	}
	h.advance(6 * time.Second)
	h.wantNothing(b)
	// Nothing parked: nothing to withdraw.
	if n := h.cancel(a, 0); n != 0 {
		t.Fatalf("cancel with nothing parked withdrew %d", n)
	}
}

// A withdrawn w consumes the enqueue state, as a timeout does.
func TestCancelParkedWait(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantStatus(t, h.do(b, "e", "k", ""), vocab.StatusQueued)
	wantBlocked(t, h.do(b, "w", "k", "5"))
	if n := h.cancel(b, 0); n != 1 {
		t.Fatalf("cancel of a parked w withdrew %d", n)
	}
	wantStatus(t, h.do(b, "w", "k", "0"), vocab.StatusErrorNotEnqueued)
	wantStatus(t, h.do(a, "r", "k", tk), vocab.StatusOK)
	h.wantNothing(b)
	if n := h.eng.Keys(); n != 1 {
		t.Fatalf("%d keys", n)
	}
}

// Blocking pops and barrier waits are parked requests too; a tagged
// acquire is withdrawn by its tag only.
func TestCancelPopBarrierAndTagged(t *testing.T) {
	h := newHarness(t, Config{Profile: vocab.ProfileRF})
	a, b := h.session(), h.session()
	wantBlocked(t, h.do(a, "blpop", "q", "5"))
	if n := h.cancel(a, 0); n != 1 {
		t.Fatalf("cancel of a blpop withdrew %d", n)
	}
	wantInt(t, h.do(b, "rpush", "q", "v"), 1) // no waiter took it
	h.wantNothing(a)
	wantBlocked(t, h.do(a, "bwait", "bar", "2 5"))
	if n := h.cancel(a, 0); n != 1 {
		t.Fatalf("cancel of a bwait withdrew %d", n)
	}
	wantBlocked(t, h.do(b, "bwait", "bar", "2 5")) // a left: b waits alone
	h.wantNothing(a)

	c := h.session()
	held := h.acquireTagged(c, []byte("t"), 10_000, false, 0)
	if held.Kind != KindGrant {
		t.Fatalf("tagged try: %+v", held)
	}
	if r := h.acquireTagged(a, []byte("t"), 10_000, true, 7); !r.Blocked {
		t.Fatalf("tagged wait: %+v", r)
	}
	if n := h.cancel(a, 0); n != 0 {
		t.Fatalf("untagged cancel withdrew the tagged wait")
	}
	if n := h.cancel(a, 8); n != 0 {
		t.Fatalf("cancel of another tag withdrew %d", n)
	}
	if n := h.cancel(a, 7); n != 1 {
		t.Fatalf("cancel of tag 7 withdrew %d", n)
	}
	if released, _ := h.releaseOwn(c, []byte("t")); !released {
		t.Fatalf("holder could not release")
	}
	h.wantNothing(a)
}
