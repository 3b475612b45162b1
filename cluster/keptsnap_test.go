package cluster

import (
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
)

// A failover keeps the holds of the earlier epoch's connections until
// their leases end, with their sessions closed. A raft snapshot taken
// meanwhile must restore: before the engine's format 3 named those closed
// sessions, every such snapshot was refused ("record of session …, which
// is not in the table"), so a member that restarted or fell behind within
// a lease of a failover could not come back. The restored replica then
// goes on as the others: the hold stays until its lease ends, and goes
// then.
func TestSnapshotAfterFailoverWithKeptHold(t *testing.T) {
	head := [][]byte{
		promotion(),
		AppendBatch(nil, &Batch{Stamp: engineStamp(2), Ops: []Op{reqOp(t, 1<<32|1, "l", "k1", "0 30")}}),
		// A failover: connection 1<<32|1's session closes, its hold stays.
		AppendBatch(nil, &Batch{Stamp: engineStamp(3), Ops: []Op{{Kind: OpPromote}}}),
	}
	tail := [][]byte{
		AppendBatch(nil, &Batch{Stamp: engineStamp(10), Ops: []Op{reqOp(t, 2<<32|1, "l", "k1", "0 30")}}),     // still held
		AppendBatch(nil, &Batch{Stamp: engineStamp(31_011), Ops: []Op{reqOp(t, 2<<32|1, "l", "k1", "0 30")}}), // its lease has ended
	}
	ref := &textOutput{}
	a := NewFSM(engine.Config{Shards: 4}, ref)
	replay(a, head, 1)
	b, rest := restoredCopy(t, a, 16, "a snapshot taken while a failover's hold is kept")
	n := len(ref.lines)
	replay(a, tail, uint64(len(head)+1))
	replay(b, tail, uint64(len(head)+1))
	compare(t, "restored", ref.lines[n:], rest.lines)
	if a.Digest() != b.Digest() {
		t.Fatal("the restored replica ends in another state")
	}
	var got []string
	for _, l := range rest.lines {
		got = append(got, strings.Fields(l)[1])
	}
	if strings.Join(got, " ") != "timeout ok" {
		t.Fatalf("the new epoch's tries on the kept hold: %q, want the first refused and the second granted\n%s", got, strings.Join(rest.lines, "\n"))
	}
}
