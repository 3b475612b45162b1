package cluster

import (
	"github.com/dflockd-ng/dflockd/engine"
	"testing"
	"time"
)

// TestOrphanKeptAndTakenOver: in the replicated state alone, a closed
// connection with a ref becomes an orphan (with the TTL on), a new
// connection presenting the ref takes it over, and one left alone is
// closed once the TTL passes.
func TestOrphanKeptAndTakenOver(t *testing.T) {
	const a, b, c = 1<<32 | 1, 1<<32 | 2, 1<<32 | 3
	f := NewFSM(engine.Config{}, &textOutput{})
	ttl := AppendBatch(nil, &Batch{Ops: []Op{{Kind: OpOrphanTTL, TTL: time.Second}}})
	replay(f, [][]byte{promotion(), ttl, AppendBatch(nil, &Batch{Stamp: 1, Ops: []Op{
		reqOp(t, a, "stable-ref", "ra", "_"),
		reqOp(t, a, "l", "k", "0 30"),
		{Kind: OpClose, Conn: a},
	}})}, 1)
	if n := f.eng.Orphans(); n != 1 {
		t.Fatalf("%d orphans after a closed", n)
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2, Ops: []Op{
		reqOp(t, b, "stable-ref", "ra", "_"),
		reqOp(t, c, "stable-ref", "rc", "_"),
		reqOp(t, c, "l", "k2", "0 30"),
		{Kind: OpClose, Conn: c},
	}})}, 4)
	if st := f.eng.StableRefs(); len(st.Orphans) != 1 || !f.eng.Readopts(b) || st.Orphans[0].Ref != "rc" || st.Orphans[0].Session == 0 {
		t.Fatalf("stable refs %+v, b readopts %v", st, f.eng.Readopts(b))
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2 + 999_999_999})}, 5)
	if f.eng.Orphans() != 1 {
		t.Fatal("reaped before the TTL")
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2 + 1_000_000_000})}, 6)
	if f.eng.Orphans() != 0 {
		t.Fatal("not reaped at the TTL")
	}
}

// TestTakeoverRebindsTheHolder: once a new connection takes an orphan
// over, the orphan's claims are shown as that connection's (its number
// and when it connected), so that the observatory finds the holder's
// transport and identity on the connection that now exists; before the
// fix the holder kept the closed connection's number.
func TestTakeoverRebindsTheHolder(t *testing.T) {
	const a, b = 1<<32 | 1, 1<<32 | 2
	f := NewFSM(engine.Config{}, &textOutput{})
	ttl := AppendBatch(nil, &Batch{Ops: []Op{{Kind: OpOrphanTTL, TTL: time.Second}}})
	replay(f, [][]byte{promotion(), ttl, AppendBatch(nil, &Batch{Stamp: 1_000_000, Ops: []Op{
		reqOp(t, a, "stable-ref", "ra", "_"),
		reqOp(t, a, "l", "k", "0 30"),
		{Kind: OpClose, Conn: a},
	}})}, 1)
	holder := func() engine.Claimant {
		t.Helper()
		ks := f.Engine().InspectKey(f.Now(), "k")
		if len(ks) != 1 || len(ks[0].Holders) != 1 {
			t.Fatalf("key k: %+v, want one holder", ks)
		}
		return ks[0].Holders[0].Claimant
	}
	if c := holder(); c.ConnID != a {
		t.Fatalf("the orphan's holder is connection %d, want %d", c.ConnID, a)
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 5_000_000, Ops: []Op{
		reqOp(t, b, "stable-ref", "ra", "_"),
	}})}, 2)
	c := holder()
	if c.ConnID != b {
		t.Fatalf("after the takeover the holder is connection %d, want %d (the one that took it over)", c.ConnID, b)
	}
	at, open, known := f.Engine().SessionOpened(c.Session)
	if !open || !known || at != 5 {
		t.Fatalf("after the takeover the session opened at %d (open %v, known %v), want 5 ms, the takeover's", at, open, known)
	}
}
