package cluster

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// textOutput records an FSM's deliveries as text, for comparing replicas.
type textOutput struct {
	lines  []string
	tokens map[string]string // key → last token granted
}

func (o *textOutput) Deliver(conn uint32, hasReply bool, r engine.Result, fx *engine.Effects) {
	if hasReply {
		o.note(conn, r)
	}
	for _, e := range fx.List {
		o.note(uint32(e.To), e.Result)
	}
}

func (o *textOutput) note(conn uint32, r engine.Result) {
	o.lines = append(o.lines, fmt.Sprintf("%d %v %d %s %d %d %q %v %+v %d %v", conn, r.Status, r.Kind, r.Token.Append(nil), r.Lease, r.Int, r.Value, r.Items, r.Push, r.Tag, r.Blocked))
}

func (o *textOutput) Demoted() {}

// fsmGen writes a random cluster log: requests of every primitive from
// connections of the current epoch, closes, promotions (which end the
// earlier epochs' connections), GC and time passing so that leases,
// timeouts and TTLs fire.
type fsmGen struct {
	rng     *rand.Rand
	stamp   timerwheel.Instant
	epoch   uint64
	conns   []uint64
	next    uint32
	tokens  []string
	batches [][]byte
}

func (g *fsmGen) batch(t *testing.T) []byte {
	g.stamp += timerwheel.Instant(g.rng.IntN(700)) * timerwheel.Instant(time.Millisecond)
	b := Batch{Stamp: g.stamp}
	if len(g.batches) == 0 {
		b.Ops = append(b.Ops, Op{Kind: OpInit, Init: Init{Profile: vocab.ProfileRF, DefaultLease: 2 * time.Second,
			MaxWaiters: 6, GCMaxIdle: 3 * time.Second, TokenKey: engine.TokenKey{1, 2, 3}, FenceFloor: 1 << 40}})
	}
	if len(g.batches) == 0 || g.rng.IntN(40) == 0 {
		// Orphans on (0–2 s) or off, as the new leader's flag says.
		b.Ops = append(b.Ops, Op{Kind: OpOrphanTTL, TTL: time.Duration(g.rng.IntN(3)) * time.Second})
		b.Ops = append(b.Ops, Op{Kind: OpPromote})
		g.epoch++
		g.conns = g.conns[:0]
	}
	for range g.rng.IntN(6) {
		if len(g.conns) == 0 || g.rng.IntN(10) == 0 {
			g.next++
			g.conns = append(g.conns, g.epoch<<32|uint64(g.next))
		}
		i := g.rng.IntN(len(g.conns))
		conn := g.conns[i]
		switch g.rng.IntN(30) {
		case 0:
			b.Ops = append(b.Ops, Op{Kind: OpClose, Conn: conn})
			g.conns = append(g.conns[:i], g.conns[i+1:]...)
			continue
		case 1:
			b.Ops = append(b.Ops, Op{Kind: OpGC})
			continue
		case 2, 3:
			b.Ops = append(b.Ops, Op{Kind: OpForeign, Conn: conn, Foreign: g.foreign()})
			continue
		case 4:
			// An operator's release, of every holder or of one fence.
			fr := ForceRelease{Semaphore: g.rng.IntN(2) == 0, Key: []byte(fmt.Sprint("k", g.rng.IntN(4))), Who: []byte("admin")}
			if fr.Semaphore {
				fr.Key = append([]byte("s"), fr.Key...)
			}
			if g.rng.IntN(2) == 0 {
				fr.Fence = 1<<40 + uint64(g.rng.IntN(40))
			}
			b.Ops = append(b.Ops, Op{Kind: OpForceRelease, Conn: conn, Release: fr})
			continue
		case 5:
			// A connection's identity with quotas (engine/tenant.go), or
			// new bounds for one (connection 0: a reload).
			tb := TenantBounds{Name: []byte(fmt.Sprint("team-", g.rng.IntN(3))),
				Claims: int64(g.rng.IntN(4)), Waiting: int64(g.rng.IntN(3)), Keys: int64(g.rng.IntN(4))}
			if g.rng.IntN(4) == 0 {
				conn &^= 1<<32 - 1
			}
			b.Ops = append(b.Ops, Op{Kind: OpTenant, Conn: conn, Tenant: tb})
			continue
		}
		key := fmt.Sprint("k", g.rng.IntN(4))
		tok := "0000000000000000000000000000000a"
		if len(g.tokens) > 0 {
			tok = g.tokens[g.rng.IntN(len(g.tokens))]
		}
		cmds := [][3]string{
			{"l", key, fmt.Sprint(g.rng.IntN(2), " ", 1+g.rng.IntN(3))}, {"r", key, tok}, {"n", key, tok + " 2"},
			{"e", key, "2"}, {"w", key, "1"}, {"sl", "s" + key, "1 2 3"}, {"sr", "s" + key, tok},
			{"incr", key, "3"}, {"kset", key, "v 1"}, {"kget", key, ""}, {"lpush", key, "x"},
			{"blpop", key, "1"}, {"listen", "ch.*", ""}, {"signal", "ch.a", "hi"}, {"watch", key, ""},
			{"elect", "e" + key, "0 2"}, {"bwait", "b" + key, "2 1"},
			{"stable-ref", fmt.Sprint("ref", g.rng.IntN(3)), "_"}, // the key line carries the ref
		}
		c := cmds[g.rng.IntN(len(cmds))]
		r, err := parse.Parse(parse.Frame{Cmd: []byte(c[0]), Key: []byte(c[1]), Arg: []byte(c[2])})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		b.Ops = append(b.Ops, Op{Kind: OpRequest, Conn: conn, Req: r})
	}
	data := AppendBatch(nil, &b)
	g.batches = append(g.batches, data)
	return data
}

// foreign returns a random godistlock command (engine/foreign.go) on the
// keys the dflockd requests use, so both protocols contend for them.
func (g *fsmGen) foreign() Foreign {
	fo := Foreign{Key: []byte(fmt.Sprint("k", g.rng.IntN(4))), LeaseMs: int64(g.rng.IntN(3)) * 700}
	switch g.rng.IntN(5) {
	case 0, 1:
		fo.Kind, fo.Wait = engine.KindTaggedAcquire, g.rng.IntN(3) > 0
		fo.Tag = uint32(1 + g.rng.IntN(5))
	case 2:
		fo.Kind = engine.KindOwnRelease
	case 3:
		fo.Kind, fo.Fence = engine.KindFenceRenew, 1<<40+uint64(g.rng.IntN(40))
	default:
		fo.Kind = engine.KindHolder
	}
	return fo
}

// replay applies batches to f as raft would, delivering to the latest
// epoch's connections as its leader would.
func replay(f *FSM, batches [][]byte, first uint64) {
	for i, data := range batches {
		l := &raft.Log{Index: first + uint64(i), Type: raft.LogCommand, Data: data}
		if e, ok := f.Apply(l).(uint64); ok {
			f.deliverEpoch.Store(e)
		}
	}
}

// TestFSMDeterminism: replicas with different shard counts, and a replica
// restored from a snapshot taken midway, deliver the same results and end
// with the same digest as the replica that ran the log first.
func TestFSMDeterminism(t *testing.T) {
	g := &fsmGen{rng: rand.New(rand.NewPCG(7, 11))}
	ref := &textOutput{}
	a := NewFSM(engine.Config{Shards: 4}, ref)
	for range 3000 {
		data := g.batch(t)
		replay(a, [][]byte{data}, uint64(len(g.batches)))
		for _, line := range ref.lines[len(ref.lines)-min(len(ref.lines), 8):] {
			if f := strings.Fields(line); len(f) > 3 && len(f[3]) == 32 {
				g.tokens = append(g.tokens[max(0, len(g.tokens)-16):], f[3])
			}
		}
	}
	t.Logf("%d batches, %d deliveries", len(g.batches), len(ref.lines))

	other := &textOutput{}
	b := NewFSM(engine.Config{Shards: 64}, other)
	replay(b, g.batches, 1)
	compare(t, "64 shards", ref.lines, other.lines)
	if a.Digest() != b.Digest() {
		t.Fatal("digests differ between shard counts")
	}

	half := len(g.batches) / 2
	first := &textOutput{}
	c := NewFSM(engine.Config{Shards: 8}, first)
	replay(c, g.batches[:half], 1)
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	rest := &textOutput{}
	d := NewFSM(engine.Config{Shards: 16}, rest)
	if err := d.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if d.Digest() != c.Digest() {
		t.Fatal("restored replica's digest differs from the snapshotted one")
	}
	d.deliverEpoch.Store(c.deliverEpoch.Load())
	replay(d, g.batches[half:], uint64(half)+1)
	compare(t, "restored", ref.lines[len(first.lines):], rest.lines)
	if d.Digest() != a.Digest() {
		t.Fatal("restored replica ends in another state")
	}
}

func compare(t *testing.T, what string, want, got []string) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("%s: delivery %d differs:\n want %s\n got  %s", what, i, want[i], got[i])
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d deliveries, want %d", what, len(got), len(want))
	}
}

// bufSink is a raft.SnapshotSink over a buffer.
type bufSink struct{ *bytes.Buffer }

func (bufSink) ID() string    { return "test" }
func (bufSink) Cancel() error { return nil }
func (bufSink) Close() error  { return nil }

// TestRestoreRefusesDamage: a snapshot with a flipped byte or cut short is
// refused, and the replica keeps its state.
func TestRestoreRefusesDamage(t *testing.T) {
	g := &fsmGen{rng: rand.New(rand.NewPCG(3, 5))}
	f := NewFSM(engine.Config{}, &textOutput{})
	for range 200 {
		replay(f, [][]byte{g.batch(t)}, uint64(len(g.batches)))
	}
	snap, _ := f.Snapshot()
	var buf bytes.Buffer
	_ = snap.Persist(&bufSink{Buffer: &buf})
	good := buf.Bytes()
	for _, bad := range [][]byte{good[:len(good)/2], flip(good, len(good)-3), flip(good, len(snapMagic)+40)} {
		r := NewFSM(engine.Config{}, &textOutput{})
		before := r.Digest()
		if err := r.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
			t.Fatal("a damaged snapshot was accepted")
		}
		if r.Digest() != before {
			t.Fatal("a refused snapshot changed the replica")
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}
