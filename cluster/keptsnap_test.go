package cluster

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
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
	req := func(conn uint64, cmd, key, arg string) Op {
		t.Helper()
		r, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
		if err != nil {
			t.Fatal(err)
		}
		return Op{Kind: OpRequest, Conn: conn, Req: r}
	}
	batches := [][]Op{
		{{Kind: OpInit, Init: Init{Profile: vocab.ProfileV2, DefaultLease: 30 * time.Second, TokenKey: engine.TokenKey{9}}},
			{Kind: OpPromote}},
		{req(1<<32|1, "l", "k1", "0 30")},
		{{Kind: OpPromote}}, // a failover: connection 1<<32|1's session closes, its hold stays
	}
	later := [][]Op{
		{req(2<<32|1, "l", "k1", "0 30")}, // still held: not granted
		{},
		{req(2<<32|1, "l", "k1", "0 30")}, // the lease has ended
	}
	var head, tail [][]byte
	for i, ops := range batches {
		head = append(head, AppendBatch(nil, &Batch{Stamp: engineStamp(1 + i), Ops: ops}))
	}
	for i, ops := range later {
		stamp := engineStamp(10 + i)
		if i == 2 {
			stamp += engineStamp(31_000) // 31 s on
		}
		tail = append(tail, AppendBatch(nil, &Batch{Stamp: stamp, Ops: ops}))
	}
	ref := &textOutput{}
	a := NewFSM(engine.Config{Shards: 4}, ref)
	replay(a, head, 1)
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	rest := &textOutput{}
	b := NewFSM(engine.Config{Shards: 16}, rest)
	if err := b.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatalf("a snapshot taken while a failover's hold is kept: %v", err)
	}
	if a.Digest() != b.Digest() {
		t.Fatal("the restored replica's digest differs")
	}
	b.deliverEpoch.Store(a.deliverEpoch.Load())
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
