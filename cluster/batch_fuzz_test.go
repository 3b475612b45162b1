package cluster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// FuzzDecodeBatch: no input crashes the decoder; what it accepts encodes
// back to the same bytes (the encoding is canonical, so replicas that
// re-encode agree), and what it refuses is ErrBadBatch.
func FuzzDecodeBatch(f *testing.F) {
	g := &fsmGen{rng: rand.New(rand.NewPCG(1, 2))}
	for range 8 {
		f.Add(g.batch(&testing.T{}))
	}
	f.Add([]byte{})
	f.Add([]byte{batchFormat, 0, 0})
	f.Add(AppendBatch(nil, &Batch{Stamp: 5, Ops: []Op{{Kind: OpFenceFloor, Floor: 1 << 60}, {Kind: OpPromote}}}))
	f.Add(AppendBatch(nil, &Batch{Stamp: 6, Ops: []Op{{Kind: OpTenant, Conn: 1<<32 | 3,
		Tenant: TenantBounds{Name: []byte("team-a"), Claims: 5, Keys: 2}}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeBatch(data)
		if err != nil {
			if !errors.Is(err, ErrBadBatch) {
				t.Fatalf("error %v is not ErrBadBatch", err)
			}
			return
		}
		again := AppendBatch(nil, &b)
		if !bytes.Equal(again, data) {
			// Varints have one shortest form; a longer one decodes too.
			// Accept it only if the re-encoding decodes to the same.
			b2, err := DecodeBatch(again)
			if err != nil || !bytes.Equal(AppendBatch(nil, &b2), again) {
				t.Fatalf("re-encoding is not stable: %x → %x", data, again)
			}
		}
	})
}

// TestBatchRoundTrip: the generator's batches decode to ops that encode to
// the same bytes.
func TestBatchRoundTrip(t *testing.T) {
	g := &fsmGen{rng: rand.New(rand.NewPCG(9, 9))}
	var used []Op // the FSM's way: one slice of ops for every entry
	for range 500 {
		data := g.batch(t)
		b, err := DecodeBatch(data)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(AppendBatch(nil, &b), data) {
			t.Fatalf("round trip changed %x", data)
		}
		// Decoded over the ops of earlier batches, nothing of them stays.
		b2, err := decodeBatch(data, used[:0])
		if err != nil || len(b2.Ops) != len(b.Ops) || len(b.Ops) > 0 && !reflect.DeepEqual(b2.Ops, b.Ops) {
			t.Fatalf("decoded into used ops: %v\n%+v\nfresh:\n%+v", err, b2.Ops, b.Ops)
		}
		if cap(b2.Ops) > cap(used) {
			used = b2.Ops
		}
	}
	// A restored cluster's first leader's batch (backup.go).
	floor := AppendBatch(nil, &Batch{Stamp: 5, Ops: []Op{{Kind: OpFenceFloor, Floor: 1<<60 + 7}, {Kind: OpOrphanTTL}, {Kind: OpPromote}}})
	if b, err := DecodeBatch(floor); err != nil || b.Ops[0].Kind != OpFenceFloor || b.Ops[0].Floor != 1<<60+7 ||
		!bytes.Equal(AppendBatch(nil, &b), floor) {
		t.Fatalf("OpFenceFloor round trip: %v %+v", err, b.Ops)
	}
	// A connection's tenant (OpTenant): it round-trips, and a nameless
	// tenant or a negative bound is refused where every replica refuses it.
	tb := Op{Kind: OpTenant, Conn: 1<<32 | 3, Tenant: TenantBounds{Name: []byte("team-a"), Claims: 5, Waiting: 1, Keys: 2}}
	data := AppendBatch(nil, &Batch{Stamp: 6, Ops: []Op{tb}})
	if b, err := DecodeBatch(data); err != nil || !reflect.DeepEqual(b.Ops[0], tb) || !bytes.Equal(AppendBatch(nil, &b), data) {
		t.Fatalf("OpTenant round trip: %v %+v", err, b.Ops)
	}
	for _, bad := range []TenantBounds{{Claims: 1}, {Name: []byte("x"), Claims: -1}, {Name: []byte("x"), Waiting: -1}, {Name: []byte("x"), Keys: -1}} {
		data := AppendBatch(nil, &Batch{Stamp: 6, Ops: []Op{{Kind: OpTenant, Conn: 1 << 32, Tenant: bad}}})
		if _, err := DecodeBatch(data); !errors.Is(err, ErrBadBatch) {
			t.Fatalf("OpTenant %+v: err %v, want ErrBadBatch", bad, err)
		}
	}
	for _, bad := range [][]byte{{}, {2, 0, 0}, {batchFormat, 0, 1, byte(opLimit)}, {batchFormat, 0, 0, 9}} {
		if _, err := DecodeBatch(bad); !errors.Is(err, ErrBadBatch) {
			t.Fatalf("%x: err %v, want ErrBadBatch", bad, err)
		}
	}
}
