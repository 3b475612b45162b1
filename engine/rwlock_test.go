package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

func TestRWLockReadersShareWriterAlone(t *testing.T) {
	h := newHarness(t, Config{})
	r1, r2, w, r3 := h.session(), h.session(), h.session(), h.session()
	t1 := wantGrant(t, h.do(r1, "rl", "k", "0 30"), 30)
	t2 := wantGrant(t, h.do(r2, "rl", "k", "0 30"), 30)
	wantStatus(t, h.do(w, "wl", "k", "0"), vocab.StatusTimeout)
	wantBlocked(t, h.do(w, "wl", "k", "10"))
	// No reader barging past the queued writer (spec §B.4).
	wantStatus(t, h.do(r3, "rl", "k", "0"), vocab.StatusTimeout)
	wantBlocked(t, h.do(r3, "rl", "k", "10"))
	wantStatus(t, h.do(r1, "rr", "k", t1), vocab.StatusOK)
	h.wantNothing(w)
	wantStatus(t, h.do(r2, "wr", "k", t2), vocab.StatusOK) // mode of a token is not checked
	g := h.wantDelivered(w, vocab.StatusOK)
	h.wantNothing(r3)
	// The writer holds alone; its release hands the key to the reader.
	wantStatus(t, h.do(w, "r", "k", tok(g)), vocab.StatusOK) // plain r works too
	h.wantDelivered(r3, vocab.StatusOK)
}

func TestRWLockBatchGrantsConsecutiveReaders(t *testing.T) {
	h := newHarness(t, Config{})
	w1 := h.session()
	tw := wantGrant(t, h.do(w1, "wl", "k", "0 30"), 30)
	ra, rb, w2, rc := h.session(), h.session(), h.session(), h.session()
	wantBlocked(t, h.do(ra, "rl", "k", "10"))
	wantBlocked(t, h.do(rb, "rl", "k", "10"))
	wantBlocked(t, h.do(w2, "wl", "k", "10"))
	wantBlocked(t, h.do(rc, "rl", "k", "10"))
	wantStatus(t, h.do(w1, "wr", "k", tw), vocab.StatusOK)
	// Both readers at the head are granted together; the writer behind
	// them stops the reader after it.
	ga, gb := h.wantDelivered(ra, vocab.StatusOK), h.wantDelivered(rb, vocab.StatusOK)
	h.wantNothing(w2)
	h.wantNothing(rc)
	if ga.Token.Fence == gb.Token.Fence {
		t.Fatalf("readers share a fence: each grant draws its own")
	}
	wantStatus(t, h.do(ra, "rr", "k", tok(ga)), vocab.StatusOK)
	h.wantNothing(w2)
	wantStatus(t, h.do(rb, "rr", "k", tok(gb)), vocab.StatusOK)
	h.wantDelivered(w2, vocab.StatusOK)
	h.wantNothing(rc)
}

func TestRWLockWriterTimeoutLetsReadersThrough(t *testing.T) {
	h := newHarness(t, Config{})
	r1, w, r2 := h.session(), h.session(), h.session()
	wantGrant(t, h.do(r1, "rl", "k", "0 30"), 30)
	wantBlocked(t, h.do(w, "wl", "k", "1"))
	wantBlocked(t, h.do(r2, "rl", "k", "10"))
	h.advance(time.Second)
	h.wantDelivered(w, vocab.StatusTimeout)
	// With the writer gone the queued reader fits beside the holder.
	h.wantDelivered(r2, vocab.StatusOK)

	// The same when the writer's connection closes.
	w2, r3 := h.session(), h.session()
	wantBlocked(t, h.do(w2, "wl", "k", "10"))
	wantBlocked(t, h.do(r3, "rl", "k", "10"))
	h.close(w2)
	h.wantDelivered(r3, vocab.StatusOK)
}

func TestRWLockTypeMismatch(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.session()
	wantGrant(t, h.do(s, "l", "lock", "0"), 33)
	wantStatus(t, h.do(s, "rl", "lock", "0"), vocab.StatusErrorTypeMismatch)
	wantStatus(t, h.do(s, "we", "lock", ""), vocab.StatusErrorTypeMismatch)
	wantGrant(t, h.do(s, "rl", "rw", "0"), 33)
	wantStatus(t, h.do(s, "l", "rw", "0"), vocab.StatusErrorTypeMismatch)
	wantStatus(t, h.do(s, "e", "rw", ""), vocab.StatusErrorTypeMismatch)
	// v2 semaphores live in their own namespace, so the same name is free
	// there; in rf the one map makes it a mismatch.
	wantGrant(t, h.do(s, "sl", "rw", "0 2"), 33)
	rf := newHarness(t, Config{Profile: vocab.ProfileRF})
	s = rf.session()
	wantGrant(t, rf.do(s, "wl", "k", "0"), 33)
	wantStatus(t, rf.do(s, "sl", "k", "0 2"), vocab.StatusErrorTypeMismatch)
}

func TestRWLockTwoPhaseAndRenew(t *testing.T) {
	h := newHarness(t, Config{})
	a, b := h.session(), h.session()
	r := h.do(a, "we", "k", "10")
	if r.Status != vocab.StatusAcquired {
		t.Fatalf("we fast path: %+v", r)
	}
	wantStatus(t, h.do(b, "re", "k", ""), vocab.StatusQueued)
	if g := h.do(a, "ww", "k", "5"); g.Status != vocab.StatusOK || tok(g) != tok(r) {
		t.Fatalf("ww after fast path: %+v", g)
	}
	if n := h.do(a, "wn", "k", tok(r)+" 20"); n.Kind != KindRenew || n.Lease != 20 {
		t.Fatalf("wn: %+v", n)
	}
	wantBlocked(t, h.do(b, "rw", "k", "5"))
	wantStatus(t, h.do(a, "wr", "k", tok(r)), vocab.StatusOK)
	h.wantDelivered(b, vocab.StatusOK)
}

func TestRWLockStats(t *testing.T) {
	h := newHarness(t, Config{Profile: vocab.ProfileRF})
	a, b, c := h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "rl", "k", "0"), 33)
	g := h.do(b, "rl", "k", "0")
	wantBlocked(t, h.do(c, "wl", "k", "10"))
	ti := wantGrant(t, h.do(a, "rl", "idle", "0"), 33)
	wantStatus(t, h.do(a, "rr", "idle", ti), vocab.StatusOK) // now idle: not listed
	var doc struct {
		RW []struct {
			Key     string `json:"key"`
			Readers int    `json:"readers"`
			Writer  bool   `json:"writer"`
			Fence   uint64 `json:"fence"`
			Waiters int    `json:"waiters"`
		} `json:"rw_locks"`
	}
	if err := json.Unmarshal([]byte(h.stats(3)), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range doc.RW {
		if e.Key == "idle" {
			t.Fatalf("idle read-write lock listed: %+v", e)
		}
		if e.Key == "k" {
			found = true
			if e.Readers != 2 || e.Writer || e.Waiters != 1 || e.Fence != g.Token.Fence {
				t.Fatalf("rw_locks entry %+v, want 2 readers, 1 waiter, fence %d", e, g.Token.Fence)
			}
		}
	}
	if !found {
		t.Fatalf("rw_locks lacks k: %+v", doc.RW)
	}
}
