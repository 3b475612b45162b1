package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A connection's tenant comes through the log (OpTenant): every replica
// counts its claims and keys against the same bounds, refuses alike past
// them, and a replica restored from a snapshot goes on counting as the
// others do.
func TestTenantQuotasThroughTheLog(t *testing.T) {
	const a1, a2, b1 = 1<<32 | 1, 1<<32 | 2, 1<<32 | 3
	team := func(conn uint64, name string, claims, waiting, keys int64) Op {
		return Op{Kind: OpTenant, Conn: conn, Tenant: TenantBounds{Name: []byte(name), Claims: claims, Waiting: waiting, Keys: keys}}
	}
	batches := [][]Op{
		{{Kind: OpInit, Init: Init{Profile: vocab.ProfileRF, DefaultLease: 30 * time.Second, TokenKey: engine.TokenKey{9}}},
			{Kind: OpPromote}},
		{team(a1, "team-a", 2, 1, 1), team(a2, "team-a", 2, 1, 1), reqOp(t, b1, "l", "k2", "0 30")},
		{reqOp(t, a1, "l", "k1", "0 30"), reqOp(t, a2, "l", "k2", "10 30"), reqOp(t, a1, "l", "k3", "0 30"),
			reqOp(t, a1, "incr", "c1", "1"), reqOp(t, a1, "incr", "c2", "1"), reqOp(t, b1, "incr", "c3", "1")},
	}
	later := [][]Op{
		{reqOp(t, a1, "l", "k3", "0 30"), {Kind: OpClose, Conn: a2}, reqOp(t, a1, "l", "k3", "0 30")},
		// A reload's new bounds (connection 0) apply to the tenant's
		// sessions at once.
		{team(1<<32, "team-a", 2, 1, 2), reqOp(t, a1, "incr", "c2", "1")},
	}
	encode := func(bs [][]Op, first int) [][]byte {
		var out [][]byte
		for i, ops := range bs {
			out = append(out, AppendBatch(nil, &Batch{Stamp: engineStamp(first + i), Ops: ops}))
		}
		return out
	}
	head, tail := encode(batches, 1), encode(later, 1+len(batches))

	ref := &textOutput{}
	a := NewFSM(engine.Config{Shards: 4}, ref)
	replay(a, head, 1)
	// a1 holds k1; a2 waits for k2 (b1's); a1's k3 is refused (2 claims);
	// a1's second counter is refused (keys=1); b1's counter is not.
	want := []string{"error_max_locks", "error_max_keys"}
	var got []string
	for _, l := range ref.lines {
		if strings.Contains(l, "error_max") {
			got = append(got, strings.Fields(l)[1])
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("refusals: %q, want %q\n%s", got, want, strings.Join(ref.lines, "\n"))
	}
	if c, w, k := a.Engine().LookupTenant("team-a").Usage(); c != 2 || w != 1 || k != 1 {
		t.Fatalf("team-a counts %d claims, %d waiting, %d keys; want 2, 1, 1", c, w, k)
	}

	b, rest := restoredCopy(t, a, 16, "a snapshot with tenants")
	n := len(ref.lines)
	replay(a, tail, uint64(1+len(head)))
	replay(b, tail, uint64(1+len(head)))
	compare(t, "restored", ref.lines[n:], rest.lines)
	if a.Digest() != b.Digest() {
		t.Fatal("the restored replica ends in another state")
	}
	// After a2's close its queued claim is given back: a1's second k3 is
	// granted; the raised keys bound admits c2.
	var after []string
	for _, l := range ref.lines[n:] {
		if f := strings.Fields(l); f[0] == "1" { // a1's answers
			after = append(after, f[1])
		}
	}
	if strings.Join(after, " ") != "error_max_locks ok ok" {
		t.Fatalf("after the snapshot: %q\n%s", after, strings.Join(ref.lines[n:], "\n"))
	}
	if c, w, k := b.Engine().LookupTenant("team-a").Usage(); c != 2 || w != 0 || k != 2 {
		t.Fatalf("restored team-a counts %d claims, %d waiting, %d keys; want 2, 0, 2", c, w, k)
	}
}

// engineStamp is the i-th batch's stamp: a millisecond apart.
func engineStamp(i int) timerwheel.Instant {
	return timerwheel.Instant(i) * timerwheel.Instant(time.Millisecond)
}

// A connection's tenant is proposed again, first, in each later epoch of
// the node's leadership (its session there is new), with the bounds a
// reload gave last, and never after the connection closed.
func TestConnectionTenantFollowsEpochs(t *testing.T) {
	n := &Node{}
	queued := func() []string {
		var out []string
		d := decoder{b: n.mu.queue}
		for len(d.b) > 0 && d.err == nil {
			op := d.op()
			s := fmt.Sprintf("%d:%d", op.Kind, op.Conn>>32)
			if op.Kind == OpTenant {
				s += fmt.Sprintf(":%s/%d", op.Tenant.Name, op.Tenant.Claims)
			}
			out = append(out, s)
		}
		if d.err != nil {
			t.Fatal(d.err)
		}
		n.mu.queue, n.mu.nops = n.mu.queue[:0], 0
		return out
	}
	lead := func(epoch uint64) { n.mu.ready, n.mu.epoch = true, epoch }
	req := &vocab.Request{Op: vocab.OpLock, Key: []byte("k")}
	want := func(step string, w ...string) {
		t.Helper()
		if got := queued(); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Fatalf("%s: queued %q, want %q", step, got, w)
		}
	}
	tenant, request := fmt.Sprint(int(OpTenant)), fmt.Sprint(int(OpRequest))

	// Authenticated while following: nothing proposed, and nothing lost.
	if err := n.SetTenant(5, "team", 2, 0, 0); err != ErrNotLeader {
		t.Fatalf("SetTenant on a follower: %v", err)
	}
	lead(1)
	if err := n.Submit(5, req); err != nil {
		t.Fatal(err)
	}
	want("its first request once leading", tenant+":1:team/2", request+":1")
	_ = n.Submit(5, req)
	_ = n.Submit(6, req) // another connection, without a tenant
	want("its next request", request+":1", request+":1")
	// A reload's new bounds, then a later epoch: proposed again, with them.
	_ = n.SetTenant(0, "team", 3, 0, 0)
	want("the reload", tenant+":1:team/3")
	lead(2)
	_ = n.Submit(5, req)
	want("its first request of epoch 2", tenant+":2:team/3", request+":2")
	n.Close(5)
	want("its close", fmt.Sprint(int(OpClose))+":2")
	lead(3)
	_ = n.Submit(5, req) // a new connection that took the number
	want("after the close", request+":3")
}
