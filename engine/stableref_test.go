package engine

import (
	"reflect"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// The stable-ref state's transitions (stableref.go) and the connections'
// sessions (conns.go), in the engine alone: what a cluster's FSM asks.
func TestStableRefsAndConnections(t *testing.T) {
	h := newHarness(t, Config{Shards: 2})
	open := func(conn uint64) SessionID { return h.run(Command{Kind: KindOpen, ConnID: conn}).Session }
	const a, b, c = 1<<32 | 1, 1<<32 | 2, 1<<32 | 3
	sa := open(a)
	if got, ok := h.eng.ConnSession(a); !ok || got != sa {
		t.Fatalf("ConnSession(a) = %v %v, want %v", got, ok, sa)
	}
	if got, ok := h.eng.ConnOf(sa); !ok || got != a {
		t.Fatalf("ConnOf = %#x %v", got, ok)
	}

	// Without a TTL a connection's leaving closes its session.
	h.eng.KeepRef(a, "r1")
	if l := h.eng.LeaveConn(a, 10); l != (Leaving{Session: sa}) {
		t.Fatalf("leaving without a TTL: %+v", l)
	}
	h.close(sa)
	if _, ok := h.eng.ConnSession(a); ok {
		t.Fatal("a closed session is still a's")
	}

	// With one, it stays as its ref's orphan, detached; a second
	// connection with the same ref displaces it.
	h.eng.SetOrphanTTL(time.Second)
	sb := open(b)
	h.eng.KeepRef(b, "r")
	if l := h.eng.LeaveConn(b, 10); l != (Leaving{Session: sb, Orphaned: true}) {
		t.Fatalf("leaving with a ref: %+v", l)
	}
	h.run(Command{Kind: KindDetach, Session: sb})
	if _, ok := h.eng.ConnOf(sb); ok {
		t.Fatal("a detached session is still attached")
	}
	sc := open(c)
	h.eng.KeepRef(c, "r")
	if l := h.eng.LeaveConn(c, 20); l != (Leaving{Session: sc, Orphaned: true, Displaced: sb}) {
		t.Fatalf("a second leaving with the ref: %+v", l)
	}
	h.close(sb)
	h.run(Command{Kind: KindDetach, Session: sc})

	// A connection with a session takes nothing over; one without does,
	// and readopts.
	const d, e = 2<<32 | 1, 2<<32 | 2
	sd := open(d)
	h.eng.TakeOver(d, "r", 30)
	if h.eng.Orphans() != 1 || h.eng.Readopts(d) {
		t.Fatal("a connection with a session took an orphan over")
	}
	h.eng.TakeOver(e, "r", 30)
	if got, ok := h.eng.ConnSession(e); !ok || got != sc || !h.eng.Readopts(e) || h.eng.Orphans() != 0 {
		t.Fatalf("the takeover: e has %v %v, readopts %v, %d orphans", got, ok, h.eng.Readopts(e), h.eng.Orphans())
	}

	// The state round-trips through its values, in a fixed order.
	h.eng.KeepRef(d, "rd")
	st := h.eng.StableRefs()
	want := StableRefs{TTL: time.Second, Refs: []ConnRef{{Conn: d, Ref: "rd"}, {Conn: e, Ref: "r", Readopt: true}}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("StableRefs = %+v, want %+v", st, want)
	}
	other := New(Config{Shards: 4})
	other.SetStableRefs(st)
	if !reflect.DeepEqual(other.StableRefs(), st) {
		t.Fatalf("after SetStableRefs: %+v", other.StableRefs())
	}

	// Orphans are due at their TTL, in ref order.
	if l := h.eng.LeaveConn(e, 100); !l.Orphaned {
		t.Fatalf("e's leaving: %+v", l)
	}
	h.run(Command{Kind: KindDetach, Session: sc})
	if l := h.eng.LeaveConn(d, 50); !l.Orphaned || l.Session != sd {
		t.Fatalf("d's leaving: %+v", l)
	}
	h.run(Command{Kind: KindDetach, Session: sd})
	at := timerwheel.Instant(time.Second)
	if due := h.eng.DueOrphans(49 + at); len(due) != 0 {
		t.Fatalf("due before the TTL: %v", due)
	}
	if due := h.eng.DueOrphans(100 + at); !reflect.DeepEqual(due, []SessionID{sc, sd}) {
		t.Fatalf("due: %v, want [%v %v] (refs r, rd)", due, sc, sd)
	}
}
