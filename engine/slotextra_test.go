package engine

import (
	"bytes"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// A slot keeps what it rarely has in its shard's extras (slot.go): a lease
// of 2^32 ms or more and the tag of a tagged acquire. They answer, survive a
// snapshot and its restore, enter the digest, and leave with their slot.
func TestSlotExtras(t *testing.T) {
	h := newHarness(t, Config{})
	far, tagged, holder := h.session(), h.session(), h.session()

	const farLease = 60 * 24 * 3600 // s: 5.18e9 ms, past a uint32
	farTok := wantGrant(t, h.apply(far, &vocab.Request{Op: vocab.OpLock, Key: []byte("far"), Lease: farLease}), farLease)
	held := wantGrant(t, h.apply(holder, &vocab.Request{Op: vocab.OpLock, Key: []byte("t"), Lease: 10}), 10)
	wantBlocked(t, h.acquireTagged(tagged, []byte("t"), 5000, true, 9))
	if n := extraCount(h.eng); n != 2 {
		t.Fatalf("%d slots in the shards' extras, want 2", n)
	}

	var snap bytes.Buffer
	if err := h.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	for _, shards := range []int{1, 16, 64} {
		cfg := h.eng.cfg
		cfg.Shards = shards
		dst, err := Restore(cfg, bytes.NewReader(snap.Bytes()))
		if err != nil {
			t.Fatalf("%d shards: restore: %v", shards, err)
		}
		if dst.Digest() != h.eng.Digest() {
			t.Fatalf("%d shards: restored digest differs", shards)
		}
		var round bytes.Buffer
		if err := dst.Snapshot(&round); err != nil || !bytes.Equal(round.Bytes(), snap.Bytes()) {
			t.Fatalf("%d shards: snapshot of the restored engine differs (%v)", shards, err)
		}
		if n := extraCount(dst); n != 2 {
			t.Fatalf("%d shards: %d slots in the restored extras, want 2", shards, n)
		}
	}

	// The digest sees the far lease: one renewed to another far lease
	// differs.
	before := h.eng.Digest()
	if r := h.do(far, "n", "far", farTok+" 5000000"); r.Status != vocab.StatusOK || r.Lease != 5000000 {
		t.Fatalf("renew to another far lease: %+v", r)
	}
	if h.eng.Digest() == before {
		t.Fatal("digest unchanged by a far lease's renewal")
	}
	// A lease that fits leaves the extras.
	if r := h.do(far, "n", "far", farTok+" 30"); r.Status != vocab.StatusOK || r.Lease != 30 {
		t.Fatalf("renew to a near lease: %+v", r)
	}
	if n := extraCount(h.eng); n != 1 {
		t.Fatalf("%d slots in the extras after the far lease went, want 1", n)
	}

	// The tag comes back with the grant, and with the release of the hold.
	wantStatus(t, h.do(holder, "r", "t", held), vocab.StatusOK)
	if got := h.wantDelivered(tagged, vocab.StatusOK); got.Tag != 9 {
		t.Fatalf("grant delivered with tag %d, want 9", got.Tag)
	}
	if released, tag := h.releaseOwn(tagged, []byte("t")); !released || tag != 9 {
		t.Fatalf("releaseOwn = %v, tag %d; want true, 9", released, tag)
	}
	wantStatus(t, h.do(far, "r", "far", farTok), vocab.StatusOK)
	if n := extraCount(h.eng); n != 0 {
		t.Fatalf("%d slots in the extras after every release, want 0", n)
	}
}

func extraCount(e *Engine) int {
	n := 0
	for i := range e.shards {
		sh := &e.shards[i]
		sh.mu.Lock()
		n += len(sh.extras)
		sh.mu.Unlock()
	}
	return n
}
