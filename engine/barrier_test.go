package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

func TestBarrierTripsAndRestarts(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	wantBlocked(t, h.do(a, "bwait", "b", "3 10"))
	wantBlocked(t, h.do(b, "bwait", "b", "3 10"))
	wantStatus(t, h.do(c, "bwait", "b", "2 10"), vocab.StatusErrorBarrierCountMismatch)
	wantStatus(t, h.do(c, "bwait", "b", "3 10"), vocab.StatusOK) // the 3rd trips it
	h.wantDelivered(a, vocab.StatusOK)
	h.wantDelivered(b, vocab.StatusOK)
	if n := h.eng.rfKeys.Load(); n != 0 {
		t.Fatalf("tripped barrier still counts as %d key(s)", n)
	}
	// A new generation with another count.
	wantBlocked(t, h.do(a, "bwait", "b", "2 10"))
	wantStatus(t, h.do(b, "bwait", "b", "2 0"), vocab.StatusOK) // timeout 0 that trips it: ok
	h.wantDelivered(a, vocab.StatusOK)
}

func TestBarrierLeaverV2AndBreakingRF(t *testing.T) {
	// v2: a participant that times out leaves; the others keep waiting.
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	wantBlocked(t, h.do(a, "bwait", "b", "3 1"))
	wantBlocked(t, h.do(b, "bwait", "b", "3 10"))
	h.advance(time.Second)
	h.wantDelivered(a, vocab.StatusTimeout)
	h.wantNothing(b)
	wantStatus(t, h.do(c, "bwait", "b", "3 0"), vocab.StatusTimeout) // 2 of 3: not tripped
	h.wantNothing(b)

	// rf: one leaver breaks it for everyone (spec §B.11, §I.26).
	rf := newHarness(t, Config{Profile: vocab.ProfileRF})
	a, b, c = rf.session(), rf.session(), rf.session()
	wantBlocked(t, rf.do(a, "bwait", "b", "3 1"))
	wantBlocked(t, rf.do(b, "bwait", "b", "3 10"))
	rf.advance(time.Second)
	rf.wantDelivered(a, vocab.StatusTimeout)
	rf.wantDelivered(b, vocab.StatusTimeout)
	// A disconnect breaks it too.
	wantBlocked(t, rf.do(a, "bwait", "d", "3 10"))
	wantBlocked(t, rf.do(b, "bwait", "d", "3 10"))
	rf.close(a)
	rf.wantDelivered(b, vocab.StatusTimeout)
	rf.wantNothing(a)
	// A non-blocking arrival that does not trip breaks it as well.
	wantBlocked(t, rf.do(b, "bwait", "e", "3 10"))
	wantStatus(t, rf.do(c, "bwait", "e", "3 0"), vocab.StatusTimeout)
	rf.wantDelivered(b, vocab.StatusTimeout)
}

func TestBarrierMaxKeysAndDrain(t *testing.T) {
	h := newHarness(t, Config{MaxKeys: 1})
	a, b := h.session(), h.session()
	wantBlocked(t, h.do(a, "bwait", "x", "2 10"))
	wantStatus(t, h.do(b, "bwait", "y", "2 10"), vocab.StatusErrorMaxKeys)
	h.drain()
	h.wantDelivered(a, vocab.StatusError)
}
