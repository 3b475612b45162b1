package cluster

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

func reqOp(t *testing.T, conn uint64, cmd, key, arg string) Op {
	t.Helper()
	r, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
	if err != nil {
		t.Fatalf("%s %s %s: %v", cmd, key, arg, err)
	}
	return Op{Kind: OpRequest, Conn: conn, Req: r}
}

// promotion is a new cluster's first entry: Init, then epoch 1.
func promotion() []byte {
	return AppendBatch(nil, &Batch{Ops: []Op{
		{Kind: OpInit, Init: Init{Profile: vocab.ProfileV2, DefaultLease: 30 * time.Second, TokenKey: engine.TokenKey{9}}},
		{Kind: OpPromote},
	}})
}

// TestParkedRequestsWaitTheirTurn: a connection pipelines requests into
// the log behind one that waits (a lock held by another connection); they
// run after its grant, in order, on every replica alike, and a snapshot
// taken while they wait carries them.
func TestParkedRequestsWaitTheirTurn(t *testing.T) {
	const a, b, c = 1<<32 | 1, 1<<32 | 2, 1<<32 | 3
	first := AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "l", "k", "10 30"), // waits for a's release
		reqOp(t, b, "incr", "n", "1"),  // after b's grant
		reqOp(t, b, "l", "k2", "0 30"),
		reqOp(t, c, "incr", "n", "1"), // not behind anything: now
	}})
	live := &textOutput{}
	f := NewFSM(engine.Config{Shards: 2}, live)
	replay(f, [][]byte{promotion(), first}, 1)
	if len(live.lines) != 2 {
		t.Fatalf("first entry delivered %q; want a's grant and c's incr only", live.lines)
	}
	grantA := strings.Fields(live.lines[0])
	if grantA[0] != "1" || len(grantA[3]) != 32 || !strings.HasPrefix(live.lines[1], "3 ") || strings.Fields(live.lines[1])[5] != "1" {
		t.Fatalf("first entry delivered %q", live.lines)
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	restoredOut := &textOutput{}
	g := NewFSM(engine.Config{Shards: 8}, restoredOut)
	if err := g.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if g.Digest() != f.Digest() {
		t.Fatal("the restored replica's digest differs")
	}
	g.deliverEpoch.Store(f.deliverEpoch.Load())

	second := AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(2 * time.Second), Ops: []Op{
		reqOp(t, a, "r", "k", grantA[3]),
	}})
	before := len(live.lines)
	replay(f, [][]byte{second}, 3)
	replay(g, [][]byte{second}, 3)
	got := live.lines[before:]
	compare(t, "restored", got, restoredOut.lines)
	if f.Digest() != g.Digest() {
		t.Fatal("replicas differ after the wait ended")
	}
	// a's release, b's grant, b's incr (2: after c's), b's try-lock of k2.
	if len(got) != 4 || !strings.HasPrefix(got[0], "1 ok") || !strings.HasPrefix(got[1], "2 ok") ||
		len(strings.Fields(got[1])[3]) != 32 || !strings.HasPrefix(got[2], "2 ok") || strings.Fields(got[2])[5] != "2" ||
		!strings.HasPrefix(got[3], "2 ok") || len(strings.Fields(got[3])[3]) != 32 {
		t.Fatalf("after the release: %q", got)
	}
	if n := f.eng.Queued(sessionOf(f, b)); n != 0 {
		t.Fatalf("b has %d requests still queued", n)
	}
}

// TestParkedRequestsDroppedOnClose: what a connection had parked behind a
// wait never runs once it closes.
func TestParkedRequestsDroppedOnClose(t *testing.T) {
	const a, b = 1<<32 | 1, 1<<32 | 2
	out := &textOutput{}
	f := NewFSM(engine.Config{}, out)
	replay(f, [][]byte{promotion(), AppendBatch(nil, &Batch{Stamp: 1, Ops: []Op{
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "l", "k", "10 30"),
		reqOp(t, b, "incr", "n", "5"),
		{Kind: OpClose, Conn: b},
		reqOp(t, a, "incr", "n", "1"),
	}})}, 1)
	last := out.lines[len(out.lines)-1]
	if !strings.HasPrefix(last, "1 ok") || strings.Fields(last)[5] != "1" {
		t.Fatalf("deliveries %q: b's parked incr ran", out.lines)
	}
	if _, ok := f.eng.ConnSession(b); ok || f.eng.Sessions() != 1 {
		t.Fatalf("b's session outlived its close (%d sessions)", f.eng.Sessions())
	}
}

// TestOrphanDropsWhatWaitedBehind: a connection with a ref that closes
// while its lock waits leaves an orphan whose wait stays, but what it
// sent behind that wait never runs, and the connection that takes the
// orphan over is not held back by it: its incr runs at once, and its
// acquire of the key takes the orphan's place in the queue back, granted
// to it (once) when the holder releases.
func TestOrphanDropsWhatWaitedBehind(t *testing.T) {
	const a, b, d = 1<<32 | 1, 1<<32 | 2, 1<<32 | 4
	out := &textOutput{}
	f := NewFSM(engine.Config{Shards: 2}, out)
	replay(f, [][]byte{promotion(), AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{
		{Kind: OpOrphanTTL, TTL: time.Minute},
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "stable-ref", "rb", "_"),
		reqOp(t, b, "l", "k", "50 30"), // waits for a
		reqOp(t, b, "incr", "n", "5"),  // behind it: dropped with b
		{Kind: OpClose, Conn: b},
		reqOp(t, d, "stable-ref", "rb", "_"), // takes b's session over
		reqOp(t, d, "incr", "n", "1"),        // not behind b's wait: now
		reqOp(t, d, "l", "k", "50 30"),       // b's place in the queue
	}})}, 1)
	var mine []string
	for _, l := range out.lines {
		if strings.HasPrefix(l, "4 ") {
			mine = append(mine, l)
		}
	}
	if len(mine) != 2 || strings.Fields(mine[1])[5] != "1" {
		t.Fatalf("d got %q; want its stable-ref's ok and its incr's (1, b's incr never ran)", mine)
	}
	grantA := strings.Fields(out.lines[0])
	before := len(out.lines)
	replay(f, [][]byte{AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(2 * time.Second), Ops: []Op{
		reqOp(t, a, "r", "k", grantA[3]),
	}})}, 3)
	got := out.lines[before:]
	if len(got) != 2 || !strings.HasPrefix(got[1], "4 ok") || len(strings.Fields(got[1])[3]) != 32 {
		t.Fatalf("after a's release: %q; want a's ok and d's grant", got)
	}
}
