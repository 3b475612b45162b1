package cluster

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// v3Log is the log of testdata/snapshot-v3-parked.bin: connection b's
// lock waits for a's, and b pipelines behind it an incr, a stable-ref, a
// barrier, a signal (c listens) and a try-lock; c's incr is behind
// nothing. The snapshot was written by the FSM of format V3 (which kept
// b's requests in its parked map) after the first entry of requests.
func v3Log(t *testing.T) (promote, first []byte) {
	const a, b, c = 1<<32 | 1, 1<<32 | 2, 1<<32 | 3
	return promotion(), AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{
		{Kind: OpOrphanTTL, TTL: time.Minute},
		reqOp(t, c, "listen", "ch", ""),
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "l", "k", "10 30"), // waits for a's release
		reqOp(t, b, "incr", "n", "1"),
		reqOp(t, b, "stable-ref", "rb", "_"),
		reqOp(t, b, "barrier", "_", ""),
		reqOp(t, b, "signal", "ch", "hello"),
		reqOp(t, b, "l", "k2", "0 30"),
		reqOp(t, c, "incr", "n", "1"), // not behind anything: now
	}})
}

// TestRestoreV3ParkedIntoEngineQueues: a snapshot of the format before
// the engine kept per-session order (V3: the FSM's parked map) restores
// into the engine's queues: the restored replica agrees with one that
// ran the same log, and when the wait ends the parked requests run in
// the order they were sent, stable-ref and barrier in their turn (the
// ref is kept: b's close leaves an orphan).
func TestRestoreV3ParkedIntoEngineQueues(t *testing.T) {
	const a, b = 1<<32 | 1, 1<<32 | 2
	old, live, liveOut := v3Fixture(t, "snapshot-v3-parked.bin", v3Log)
	if n := live.eng.Queued(sessionOf(live, b)); n != 5 {
		t.Fatalf("the live replica queued %d of b's requests; want 5", n)
	}
	grantA := strings.Fields(liveOut.lines[1]) // after c's listen
	if grantA[0] != "1" || len(grantA[3]) != 32 {
		t.Fatalf("first entry delivered %q", liveOut.lines)
	}

	g, gOut := restoredFrom(t, old)
	if n := g.eng.Queued(sessionOf(g, b)); n != 5 {
		t.Fatalf("the restored replica queued %d of b's requests; want 5", n)
	}
	if g.Digest() != live.Digest() {
		t.Fatal("the replica restored from the V3 snapshot differs from the one that ran the log")
	}
	g.deliverEpoch.Store(live.deliverEpoch.Load())

	rest := [][]byte{
		AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(2 * time.Second), Ops: []Op{reqOp(t, a, "r", "k", grantA[3])}}),
		AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(3 * time.Second), Ops: []Op{{Kind: OpClose, Conn: b}}}),
	}
	before := len(liveOut.lines)
	replay(live, rest, 3)
	replay(g, rest, 3)
	compare(t, "restored from V3", liveOut.lines[before:], gOut.lines)
	if g.Digest() != live.Digest() {
		t.Fatal("replicas differ after the wait ended")
	}
	// a's release; b's grant, incr (2: after c's), stable-ref, barrier,
	// signal (reaching c: its push follows), try-lock of k2; then b's
	// close (KindGone, an empty line for b's connection).
	got := gOut.lines
	want := []struct{ conn, first string }{{"1", "ok"}, {"2", "ok"}, {"2", "ok"}, {"2", "ok"}, {"2", "ok"},
		{"2", "ok"}, {"3", "ok"}, {"2", "ok"}}
	if len(got) < len(want) {
		t.Fatalf("after the release: %q", got)
	}
	for i, w := range want {
		if f := strings.Fields(got[i]); f[0] != w.conn || f[1] != w.first {
			t.Fatalf("delivery %d is %q; all: %q", i, got[i], got)
		}
	}
	if len(strings.Fields(got[1])[3]) != 32 || strings.Fields(got[2])[5] != "2" ||
		!strings.Contains(got[6], "hello") || len(strings.Fields(got[7])[3]) != 32 {
		t.Fatalf("after the release: %q", got)
	}
	if g.Orphans() != 1 {
		t.Fatalf("%d orphans after b's close; want 1: its queued stable-ref was not kept", g.Orphans())
	}
}

// v3OrphanLog is the log of testdata/snapshot-v3-orphan.bin: b's lock
// waits for a's, b sends an incr behind it and closes with a ref, which
// leaves an orphan whose wait stays. The snapshot was written by the FSM
// of format V3 after that entry.
func v3OrphanLog(t *testing.T) (promote, first []byte) {
	const a, b = 1<<32 | 1, 1<<32 | 2
	return promotion(), AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{
		{Kind: OpOrphanTTL, TTL: time.Minute},
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "stable-ref", "rb", "_"),
		reqOp(t, b, "l", "k", "50 30"), // waits for a
		reqOp(t, b, "incr", "n", "5"),  // behind it: goes with b
		{Kind: OpClose, Conn: b},
	}})
}

// TestRestoreV3OrphanHoldsNothingBack: an orphan restored from a V3
// snapshot (whose engine format does not say that its wait belongs to no
// connection) holds back nothing of the connection that takes it over:
// that connection's incr answers at once, and its acquire takes the
// orphan's place in the queue, granted when the holder releases; as on a
// replica that ran the log.
func TestRestoreV3OrphanHoldsNothingBack(t *testing.T) {
	const a, d = 1<<32 | 1, 1<<32 | 4
	old, live, liveOut := v3Fixture(t, "snapshot-v3-orphan.bin", v3OrphanLog)
	grantA := strings.Fields(liveOut.lines[0])
	if grantA[0] != "1" || len(grantA[3]) != 32 {
		t.Fatalf("first entry delivered %q", liveOut.lines)
	}
	g, gOut := restoredFrom(t, old)
	if g.Orphans() != 1 || g.Digest() != live.Digest() {
		t.Fatalf("restored replica: %d orphans, or its digest differs", g.Orphans())
	}
	g.deliverEpoch.Store(live.deliverEpoch.Load())
	rest := [][]byte{
		AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(2 * time.Second), Ops: []Op{
			reqOp(t, d, "stable-ref", "rb", "_"),
			reqOp(t, d, "incr", "n", "1"),
			reqOp(t, d, "l", "k", "50 30"),
		}}),
		AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(3 * time.Second), Ops: []Op{reqOp(t, a, "r", "k", grantA[3])}}),
	}
	before := len(liveOut.lines)
	replay(live, rest, 3)
	replay(g, rest, 3)
	compare(t, "restored from V3", liveOut.lines[before:], gOut.lines)
	got := gOut.lines
	// d's stable-ref, its incr (1: b's never ran), a's release, d's grant.
	if len(got) != 4 || !strings.HasPrefix(got[0], "4 ok") || !strings.HasPrefix(got[1], "4 ok") ||
		strings.Fields(got[1])[5] != "1" || !strings.HasPrefix(got[2], "1 ok") ||
		!strings.HasPrefix(got[3], "4 ok") || len(strings.Fields(got[3])[3]) != 32 {
		t.Fatalf("after the take-over: %q", got)
	}
	if g.Digest() != live.Digest() {
		t.Fatal("replicas differ at the end")
	}
}

// v3Fixture reads the V3 snapshot testdata/name and runs a live replica
// over the two entries of log (the log the snapshot was taken after).
func v3Fixture(t *testing.T, name string, log func(*testing.T) (promote, first []byte)) (old []byte, live *FSM, liveOut *textOutput) {
	t.Helper()
	old, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(old, []byte(snapMagicV3)) {
		t.Fatalf("testdata/%s is not a V3 snapshot: %q", name, old[:8])
	}
	promote, first := log(t)
	liveOut = &textOutput{}
	live = NewFSM(engine.Config{Shards: 4}, liveOut)
	replay(live, [][]byte{promote, first}, 1)
	return old, live, liveOut
}

// restoredFrom is a replica restored from the snapshot old.
func restoredFrom(t *testing.T, old []byte) (*FSM, *textOutput) {
	t.Helper()
	out := &textOutput{}
	g := NewFSM(engine.Config{Shards: 2}, out)
	if err := g.Restore(io.NopCloser(bytes.NewReader(old))); err != nil {
		t.Fatal(err)
	}
	return g, out
}
