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
	if len(f.orphans) != 1 {
		t.Fatalf("%d orphans after a closed", len(f.orphans))
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2, Ops: []Op{
		reqOp(t, b, "stable-ref", "ra", "_"),
		reqOp(t, c, "stable-ref", "rc", "_"),
		reqOp(t, c, "l", "k2", "0 30"),
		{Kind: OpClose, Conn: c},
	}})}, 4)
	if len(f.orphans) != 1 || !f.readopt[b] || f.orphans["rc"].sid == 0 {
		t.Fatalf("orphans %v, readopt %v", f.orphans, f.readopt)
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2 + 999_999_999})}, 5)
	if len(f.orphans) != 1 {
		t.Fatal("reaped before the TTL")
	}
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: 2 + 1_000_000_000})}, 6)
	if len(f.orphans) != 0 {
		t.Fatal("not reaped at the TTL")
	}
}
