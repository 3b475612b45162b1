package cluster

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// delivery is one result an Output got: a command's answer (reply) or an
// effect's.
type delivery struct {
	conn  uint32
	reply bool
	r     engine.Result
}

type recOutput struct{ got []delivery }

func (o *recOutput) Deliver(conn uint32, hasReply bool, r engine.Result, fx *engine.Effects) {
	if hasReply {
		o.got = append(o.got, delivery{conn, true, r})
	}
	for _, e := range fx.List {
		o.got = append(o.got, delivery{uint32(e.To), false, e.Result})
	}
}

func (o *recOutput) Demoted() {}

// foreignLog is a cluster log in which godistlock connections 1 and 2
// and dflockd connection 3 contend for key "k": 1 takes it, 2's ON
// waits (tag 7), 3's l waits behind it, 1 renews, asks who holds it,
// then releases it: 2 is granted, with its tag.
func foreignLog(fence uint64) (head, tail []Batch) {
	const e = 1 << 32 // epoch 1
	init := Op{Kind: OpInit, Init: Init{Profile: vocab.ProfileV2, DefaultLease: 30 * time.Second, MaxWaiters: 8,
		TokenKey: engine.TokenKey{9}, FenceFloor: 1000}}
	on := func(conn uint64, tag uint32, wait bool) Op {
		return Op{Kind: OpForeign, Conn: conn, Foreign: Foreign{Kind: engine.KindTaggedAcquire, Key: []byte("k"),
			Tag: tag, Wait: wait, LeaseMs: 20000}}
	}
	l, _ := parse.Parse(parse.Frame{Cmd: []byte("l"), Key: []byte("k"), Arg: []byte("10")})
	ms := timerwheel.Instant(time.Millisecond)
	head = []Batch{
		{Stamp: ms, Ops: []Op{init, {Kind: OpPromote}}},
		{Stamp: 2 * ms, Ops: []Op{on(e|1, 1, true), on(e|2, 7, true), {Kind: OpRequest, Conn: e | 3, Req: l},
			on(e|2, 8, false)}},
	}
	tail = []Batch{
		{Stamp: 3 * ms, Ops: []Op{
			{Kind: OpForeign, Conn: e | 1, Foreign: Foreign{Kind: engine.KindFenceRenew, Key: []byte("k"), Fence: fence}},
			{Kind: OpForeign, Conn: e | 1, Foreign: Foreign{Kind: engine.KindFenceRenew, Key: []byte("k"), Fence: fence + 99}},
			{Kind: OpForeign, Conn: e | 3, Foreign: Foreign{Kind: engine.KindHolder, Key: []byte("k")}},
		}},
		{Stamp: 4 * ms, Ops: []Op{{Kind: OpForeign, Conn: e | 1, Foreign: Foreign{Kind: engine.KindOwnRelease, Key: []byte("k")}}}},
	}
	return head, tail
}

func applyBatches(f *FSM, bs []Batch, first uint64) {
	for i := range bs {
		l := &raft.Log{Index: first + uint64(i), Type: raft.LogCommand, Data: AppendBatch(nil, &bs[i])}
		if e, ok := f.Apply(l).(uint64); ok {
			f.deliverEpoch.Store(e)
		}
	}
}

// TestForeignKindsThroughTheLog: the godistlock commands apply from the
// log with the engine's semantics — an ON that waits is answered Blocked
// at once and granted later with its tag, a TRY on a taken lock is
// refused, REFRESH checks the fence, IS reports the holder's fence, OFF
// hands the lock to the next waiter —, every answer is marked
// engine.KindAnswer and no late grant is, and three replicas with different
// shard counts deliver the same results and end with the same digest.
func TestForeignKindsThroughTheLog(t *testing.T) {
	var fence uint64
	{ // the first holder's fence, as the log makes it
		o := &recOutput{}
		f := NewFSM(engine.Config{Shards: 1}, o)
		head, _ := foreignLog(0)
		applyBatches(f, head, 1)
		if len(o.got) == 0 || !o.got[0].reply || o.got[0].r.Status != vocab.StatusOK {
			t.Fatalf("first ON: %+v", o.got)
		}
		fence = o.got[0].r.Token.Fence
	}
	head, tail := foreignLog(fence)
	var outs []*recOutput
	var fsms []*FSM
	for _, shards := range []int{1, 4, 64} {
		o := &recOutput{}
		f := NewFSM(engine.Config{Shards: shards}, o)
		applyBatches(f, append(append([]Batch{}, head...), tail...), 1)
		outs, fsms = append(outs, o), append(fsms, f)
	}
	got := outs[0].got
	want := []struct {
		conn   uint32
		reply  bool
		status vocab.Status
		tag    uint32
		blk    bool
	}{
		{1, true, vocab.StatusOK, 1, false},      // ON granted at once, with its tag
		{2, true, 0, 0, true},                    // ON waits: answered Blocked
		{2, true, vocab.StatusTimeout, 0, false}, // TRY on a taken lock
		{1, true, vocab.StatusOK, 0, false},      // REFRESH with the fence
		{1, true, vocab.StatusError, 0, false},   // REFRESH with another fence
		{3, true, vocab.StatusOK, 0, false},      // IS: held
		{1, true, vocab.StatusOK, 0, false},      // OFF releases (a grant made at once keeps no tag)
		{2, false, vocab.StatusOK, 7, false},     // 2's wait granted, with its tag
	}
	if len(got) != len(want) {
		t.Fatalf("%d deliveries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.conn != w.conn || g.reply != w.reply || g.r.Status != w.status || g.r.Tag != w.tag || g.r.Blocked != w.blk ||
			g.reply != (g.r.Kind == engine.KindAnswer) { // answers are marked, late grants not
			t.Fatalf("delivery %d: %+v, want %+v", i, g, w)
		}
	}
	if got[5].r.Token.Fence != fence {
		t.Fatalf("IS reported fence %d, want the holder's %d", got[5].r.Token.Fence, fence)
	}
	if got[7].r.Token.Fence <= fence {
		t.Fatalf("the second grant's fence %d is not above the first's %d", got[7].r.Token.Fence, fence)
	}
	for i := 1; i < len(fsms); i++ {
		compareDeliveries(t, outs[0].got, outs[i].got)
		if fsms[i].Digest() != fsms[0].Digest() {
			t.Fatalf("replica %d's digest differs", i)
		}
	}
}

// TestForeignSnapshotMidWait: a replica restored from a snapshot taken
// while a godistlock ON waits (tagged, with no timer) grants it, with its
// tag, when the holder releases, as the replica that ran the whole log
// does, and ends with the same digest.
func TestForeignSnapshotMidWait(t *testing.T) {
	head, tail := foreignLog(0) // the REFRESHes fail: the fence does not matter here
	ref := &recOutput{}
	a := NewFSM(engine.Config{Shards: 4}, ref)
	applyBatches(a, head, 1)
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	mark := len(ref.got)
	applyBatches(a, tail, uint64(len(head))+1)

	rest := &recOutput{}
	b := NewFSM(engine.Config{Shards: 16}, rest)
	if err := b.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	b.deliverEpoch.Store(1)
	applyBatches(b, tail, uint64(len(head))+1)
	compareDeliveries(t, ref.got[mark:], rest.got)
	last := rest.got[len(rest.got)-1]
	if last.conn != 2 || last.reply || last.r.Status != vocab.StatusOK || last.r.Tag != 7 {
		t.Fatalf("the restored replica's last delivery is %+v, want connection 2's grant with tag 7", last)
	}
	if a.Digest() != b.Digest() {
		t.Fatal("the restored replica ends in another state")
	}
}

func compareDeliveries(t *testing.T, want, got []delivery) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d deliveries, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.conn != g.conn || w.reply != g.reply || w.r.Status != g.r.Status || w.r.Tag != g.r.Tag ||
			w.r.Blocked != g.r.Blocked || w.r.Token != g.r.Token {
			t.Fatalf("delivery %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestForeignCodesArePinned: OpForeign names engine kinds by the log's
// own bytes, so reordering the engine's Kind constants cannot change what
// a written log means; and the checked-in fuzz seeds, written with those
// bytes, still decode to the kinds they were written for.
func TestForeignCodesArePinned(t *testing.T) {
	want := map[byte]engine.Kind{1: engine.KindTaggedAcquire, 2: engine.KindOwnRelease,
		3: engine.KindFenceRenew, 4: engine.KindHolder}
	for code, k := range want {
		if got := foreignCode(k); got != code {
			t.Errorf("%v is written as %d, want %d", k, got, code)
		}
	}
	for _, k := range []engine.Kind{engine.KindRequest, engine.KindCancel, engine.KindForceRelease} {
		if foreignKind(k) {
			t.Errorf("kind %v must not travel as OpForeign", k)
		}
	}
	seeds := map[string]engine.Kind{"foreign-0": engine.KindTaggedAcquire, "foreign-1": engine.KindFenceRenew,
		"foreign-2": engine.KindOwnRelease, "foreign-3": engine.KindHolder}
	for name, k := range seeds {
		raw, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzDecodeBatch", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		lit := strings.TrimSuffix(strings.TrimPrefix(lines[len(lines)-1], "[]byte("), ")")
		data, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := DecodeBatch([]byte(data))
		if err != nil || len(b.Ops) != 1 || b.Ops[0].Kind != OpForeign || b.Ops[0].Foreign.Kind != k {
			t.Errorf("%s decodes to %+v, %v; want one OpForeign of kind %v", name, b.Ops, err, k)
		}
	}
}
