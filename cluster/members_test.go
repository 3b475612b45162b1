package cluster

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// TestMemberOpEncoding: OpMember round-trips, and what is not a member
// (no id, a length beyond the data or the cap) is ErrBadBatch.
func TestMemberOpEncoding(t *testing.T) {
	b := Batch{Stamp: 7, Ops: []Op{
		{Kind: OpMember, Member: Member{ID: "n4", Client: "10.0.0.4:6388"}},
		{Kind: OpMember, Member: Member{ID: "n2"}}, // forget
	}}
	data := AppendBatch(nil, &b)
	got, err := DecodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Ops) != 2 || got.Ops[0].Member != b.Ops[0].Member || got.Ops[1].Member != b.Ops[1].Member {
		t.Fatalf("decoded %+v", got.Ops)
	}
	if !bytes.Equal(AppendBatch(nil, &got), data) {
		t.Fatal("re-encoding differs")
	}
	for _, bad := range [][]byte{
		{batchFormat, 0, 1, byte(OpMember), 0, 0},           // no id
		{batchFormat, 0, 1, byte(OpMember), 5, 'n'},         // id longer than the data
		{batchFormat, 0, 1, byte(OpMember), 0x81, 0x08},     // id over maxMemberField (1025)
		{batchFormat, 0, 1, byte(OpMember), 1, 'n', 3, 'a'}, // client address cut short
	} {
		if _, err := DecodeBatch(bad); !errors.Is(err, ErrBadBatch) {
			t.Errorf("%x: err %v, want ErrBadBatch", bad, err)
		}
	}
}

// TestMembersReplicated: OpMember entries build the same id → address map
// on every replica; it is in the digest and in snapshots, and a
// snapshot of the previous format (without it) still restores.
func TestMembersReplicated(t *testing.T) {
	member := func(id, addr string) []byte {
		return AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{{Kind: OpMember, Member: Member{ID: raft.ServerID(id), Client: addr}}}})
	}
	log := [][]byte{promotion(), member("n1", "a:1"), member("n4", "d:4"), member("n4", "e:5"), member("n1", "")}
	f := NewFSM(engine.Config{Shards: 2}, &textOutput{})
	replay(f, log, 1)
	if a, ok := f.MemberAddr("n4"); !ok || a != "e:5" {
		t.Fatalf("n4: %q %v, want the latest address e:5", a, ok)
	}
	if _, ok := f.MemberAddr("n1"); ok {
		t.Fatal("n1 was forgotten, and is still there")
	}
	other := NewFSM(engine.Config{Shards: 4}, &textOutput{})
	replay(other, log, 1)
	if other.Digest() != f.Digest() {
		t.Fatal("replicas of the same log differ")
	}
	without := NewFSM(engine.Config{Shards: 2}, &textOutput{})
	replay(without, log[:1], 1)
	if without.Digest() == f.Digest() {
		t.Fatal("the members are not in the digest")
	}

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink bytes.Buffer
	if err := snap.Persist(bufSink{&sink}); err != nil {
		t.Fatal(err)
	}
	restored := NewFSM(engine.Config{Shards: 3}, &textOutput{})
	if err := restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if a, _ := restored.MemberAddr("n4"); a != "e:5" || restored.Digest() != f.Digest() {
		t.Fatalf("restored: n4 %q, digest equal %v", a, restored.Digest() == f.Digest())
	}
}

// TestCancelRunsWhatWaited: a connection's parked request that is
// withdrawn (OpCancel, an HTTP client that went away) no longer holds
// back the requests the connection sent after it.
func TestCancelRunsWhatWaited(t *testing.T) {
	const a, b = 1<<32 | 1, 1<<32 | 2
	out := &textOutput{}
	f := NewFSM(engine.Config{Shards: 2}, out)
	replay(f, [][]byte{promotion(), AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(time.Second), Ops: []Op{
		reqOp(t, a, "l", "k", "0 30"),
		reqOp(t, b, "l", "k", "20 30"), // waits for a
	}}), AppendBatch(nil, &Batch{Stamp: timerwheel.Instant(2 * time.Second), Ops: []Op{
		{Kind: OpCancel, Conn: b},
		reqOp(t, b, "incr", "n", "5"), // after the withdrawal: runs at once
	}})}, 1)
	var got []string
	for _, l := range out.lines {
		if strings.HasPrefix(l, "2 ") {
			got = append(got, l)
		}
	}
	// b's replies: the withdrawal's (ok, Int 1), then the incr's (ok 5).
	if len(got) != 2 || strings.Fields(got[0])[5] != "1" || strings.Fields(got[1])[5] != "5" {
		t.Fatalf("b got %q", got)
	}
	if n := f.eng.Queued(sessionOf(f, b)); n != 0 {
		t.Fatalf("b has %d requests queued after its wait was withdrawn", n)
	}
}

// TestAddAndRemoveVoter: a member started on empty stores, knowing only
// its own client address, is added by the leader, catches up, and then
// names the leader's client address (published through the log), as
// every member names its; it is removed again. ReadIndex is the ready
// leader's only.
func TestAddAndRemoveVoter(t *testing.T) {
	c := newTestCluster(t, 3, Init{DefaultLease: 30 * time.Second})
	l := c.leader(awaitFor)
	if err := l.node.ReadIndex(); err != nil {
		t.Fatalf("ReadIndex on the leader: %v", err)
	}
	for _, m := range c.members {
		if m != l {
			if err := m.node.ReadIndex(); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("ReadIndex on follower %s: %v, want ErrNotLeader", m.id, err)
			}
			if err := m.node.AddVoter("x", "a:1", "b:2"); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("AddVoter on follower %s: %v", m.id, err)
			}
		}
	}
	// The bootstrap members' addresses: this harness gives the nodes no
	// static map, so the log has none to publish; add them as an
	// operator would, with AddVoter of the existing members.
	for _, m := range c.members {
		if err := l.node.AddVoter(string(m.id), string(m.addr), "client-of-"+string(m.id)+":6388"); err != nil {
			t.Fatalf("AddVoter(%s) again: %v", m.id, err)
		}
	}

	n4 := &member{id: "n4", logs: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
	n4.addr, n4.trans = raft.NewInmemTransport("")
	c.members = append(c.members, n4)
	c.connectAll()
	c.start(n4, Init{})
	if err := l.node.AddVoter("n4", string(n4.addr), "client-of-n4:6388"); err != nil {
		t.Fatal(err)
	}
	c.converged(awaitFor)
	if got := n4.node.LeaderAddr(); got != "client-of-"+string(l.id)+":6388" {
		t.Fatalf("the added member redirects to %q", got)
	}
	st := l.node.ClusterStats()
	if len(st.Voters) != 4 || st.Voters[3].ClientAddr == "" {
		t.Fatalf("voters %+v", st.Voters)
	}
	for _, v := range st.Voters {
		if v.ClientAddr != "client-of-"+v.NodeID+":6388" {
			t.Fatalf("voter %+v", v)
		}
	}
	if err := l.node.RemoveVoter("n9"); !errors.Is(err, ErrUnknownMember) {
		t.Fatalf("RemoveVoter of a stranger: %v", err)
	}
	if err := l.node.AddVoter("", "a:1", "b:2"); !errors.Is(err, ErrBadMember) {
		t.Fatalf("AddVoter without an id: %v", err)
	}
	if err := l.node.RemoveVoter("n4"); err != nil {
		t.Fatal(err)
	}
	if st := l.node.ClusterStats(); len(st.Voters) != 3 {
		t.Fatalf("voters after the removal: %+v", st.Voters)
	}
	if _, ok := l.node.FSM().MemberAddr("n4"); ok {
		t.Fatal("the removed member's address is still recorded")
	}
	c.kill(n4)
}

// TestPromotionPublishesStaticAddresses: a leader publishes the client
// addresses of its --cluster-peers that the log lacks, so a member
// started without them learns them.
func TestPromotionPublishesStaticAddresses(t *testing.T) {
	c := newTestCluster(t, 1, Init{})
	m := c.members[0]
	_ = m.node.Shutdown()
	m.killed = true
	// Restarted with a static map, as --cluster-peers gives one.
	m.addr, m.trans = raft.NewInmemTransport(m.addr)
	m.out = newRecorder()
	node, err := New(Config{ID: m.id, Transport: m.trans, Logs: m.logs, Stable: m.logs, Snapshots: m.snaps,
		Raft: fastRaft(), Output: m.out, ClockTick: 50 * time.Millisecond,
		ClientAddrs: map[raft.ServerID]string{m.id: "static:6388"}})
	if err != nil {
		t.Fatal(err)
	}
	m.node, m.killed = node, false
	c.leader(awaitFor)
	if a, ok := node.FSM().MemberAddr(m.id); !ok || a != "static:6388" {
		t.Fatalf("published %q %v", a, ok)
	}
}
