package cluster

import (
	"testing"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

type discardOutput struct{}

func (discardOutput) Deliver(uint32, bool, engine.Result, *engine.Effects) {}
func (discardOutput) Demoted()                                             {}

// TestApplyDoesNotCopyEntries: applying an entry decodes its ops into
// storage the FSM reuses, their keys and values slices of the entry, so
// an entry of 64 requests on a counter that exists allocates nothing
// per request (every member applies every entry: what it allocates per
// request is a cluster's garbage, times its members).
func TestApplyDoesNotCopyEntries(t *testing.T) {
	f := NewFSM(engine.Config{Shards: 4}, discardOutput{})
	index := uint64(0)
	apply := func(b *Batch) {
		index++
		f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: AppendBatch(nil, b)})
	}
	apply(&Batch{Stamp: 1, Ops: []Op{{Kind: OpInit, Init: Init{Profile: vocab.ProfileRF}}, {Kind: OpPromote}}})
	const n = 64
	conn := uint64(1)<<32 | 7 // a connection of the first leadership
	b := Batch{Stamp: 2}
	for range n {
		b.Ops = append(b.Ops, Op{Kind: OpRequest, Conn: conn, Req: vocab.Request{Op: vocab.OpIncr, Key: []byte("visits"), N: 1}})
	}
	entry := AppendBatch(nil, &b)
	log := &raft.Log{Type: raft.LogCommand, Data: entry}
	applyEntry := func() {
		index++
		log.Index = index
		f.ApplyBatch([]*raft.Log{log})
	}
	applyEntry() // the counter and the connection's session now exist
	allocs := testing.AllocsPerRun(20, applyEntry)
	if allocs >= n/4 {
		t.Fatalf("an entry of %d increments allocated %.0f times, want a few for the entry, none per request", n, allocs)
	}
	if v := f.Engine().Stats(f.now, 0); v == nil {
		t.Fatal("no stats")
	}
	t.Logf("an entry of %d increments: %.0f allocations", n, allocs)
}
