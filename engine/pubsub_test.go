package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// pushes returns the push lines delivered to s.
func (h *harness) pushes(s SessionID) []string {
	var out []string
	for _, r := range h.rec.take(s) {
		if r.Kind != KindPush {
			h.t.Fatalf("non-push delivery %+v", r)
		}
		out = append(out, pushText(r))
	}
	return out
}

// pushText is a push's line without its LF.
func pushText(r Result) string {
	b := parse.AppendPush(nil, r.Push.Kind, r.Push.A, r.Push.B)
	return string(b[:len(b)-1])
}

func TestSignalFanOutAndWildcards(t *testing.T) {
	h := newHarness(t, Config{})
	exact, star, tail, sender := h.session(), h.session(), h.session(), h.session()
	wantStatus(t, h.do(exact, "listen", "orders.eu.new", ""), vocab.StatusOK)
	wantStatus(t, h.do(star, "listen", "orders.*.new", ""), vocab.StatusOK)
	wantStatus(t, h.do(tail, "listen", "orders.>", ""), vocab.StatusOK)
	// A connection matching through several patterns gets one copy.
	wantStatus(t, h.do(tail, "listen", "orders.eu.*", ""), vocab.StatusOK)
	wantInt(t, h.do(sender, "signal", "orders.eu.new", "p 1"), 3)
	for _, s := range []SessionID{exact, star, tail} {
		if got := h.pushes(s); len(got) != 1 || got[0] != "sig orders.eu.new p 1" {
			t.Fatalf("pushes %q", got)
		}
	}
	// `*` is one token, `>` one or more.
	wantInt(t, h.do(sender, "signal", "orders.eu.new.x", "p"), 1)
	if len(h.pushes(tail)) != 1 || len(h.pushes(star)) != 0 {
		t.Fatal("orders.eu.new.x must reach only orders.>")
	}
	wantInt(t, h.do(sender, "signal", "orders", "p"), 0) // `>` needs a token
	wantStatus(t, h.do(sender, "listen", "fo*", ""), vocab.StatusError)
	wantStatus(t, h.do(sender, "listen", "a.>.b", ""), vocab.StatusError)
	wantStatus(t, h.do(tail, "unlisten", "orders.>", ""), vocab.StatusOK)
	wantStatus(t, h.do(tail, "unlisten", "orders.eu.*", ""), vocab.StatusOK)
	wantStatus(t, h.do(tail, "unlisten", "never", ""), vocab.StatusOK)
	wantInt(t, h.do(sender, "signal", "orders.eu.new", "p"), 2)
}

func TestSignalQueueGroupRoundRobin(t *testing.T) {
	h := newHarness(t, Config{})
	members := []SessionID{h.session(), h.session(), h.session()}
	for _, m := range members {
		wantStatus(t, h.do(m, "listen", "jobs", "workers"), vocab.StatusOK)
	}
	plain := h.session()
	wantStatus(t, h.do(plain, "listen", "jobs", ""), vocab.StatusOK)
	got := map[SessionID]int{}
	for i := 0; i < 6; i++ {
		wantInt(t, h.do(plain, "signal", "jobs", "j"), 2) // one group + one plain
		delivered := 0
		for _, m := range members {
			n := len(h.pushes(m))
			got[m] += n
			delivered += n
		}
		if delivered != 1 {
			t.Fatalf("signal %d reached %d group members, want exactly 1", i, delivered)
		}
	}
	for i, m := range members {
		if got[m] != 2 {
			t.Fatalf("member %d got %d of 6 signals, want 2 (round-robin)", i, got[m])
		}
	}
	if n := len(h.pushes(plain)); n != 6 {
		t.Fatalf("plain subscriber got %d", n)
	}
}

func TestQueueGroupSkipsBackloggedMember(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c, sender := h.session(), h.session(), h.session(), h.session()
	for _, m := range []SessionID{a, b, c} {
		wantStatus(t, h.do(m, "listen", "jobs", "w"), vocab.StatusOK)
	}
	h.rec.full = map[SessionID]bool{b: true}
	// Round-robin starts at a, then b (full: falls to c), then c.
	var order []SessionID
	for i := 0; i < 3; i++ {
		wantInt(t, h.do(sender, "signal", "jobs", "j"), 1)
		for _, m := range []SessionID{a, b, c} {
			for range h.pushes(m) {
				order = append(order, m)
			}
		}
	}
	if want := []SessionID{a, c, c}; !slices.Equal(order, want) {
		t.Fatalf("receivers %v, want a c c (b skipped)", order)
	}
	// All full: the chosen member gets the push (its transport then
	// disconnects it) and the group does not count.
	h.rec.full = map[SessionID]bool{a: true, b: true, c: true}
	wantInt(t, h.do(sender, "signal", "jobs", "j"), 0)
	if n := len(h.pushes(a)) + len(h.pushes(b)) + len(h.pushes(c)); n != 1 {
		t.Fatalf("%d pushes, want 1 to the chosen member", n)
	}
	// A backlogged plain subscriber is not counted either.
	plain := h.session()
	wantStatus(t, h.do(plain, "listen", "news", ""), vocab.StatusOK)
	h.rec.full = map[SessionID]bool{plain: true}
	wantInt(t, h.do(sender, "signal", "news", "x"), 0)
	h.rec.full = nil
	wantInt(t, h.do(sender, "signal", "news", "y"), 1)
}

func TestSubscriptionLimitAndCleanup(t *testing.T) {
	h := newHarness(t, Config{MaxSubscriptions: 2})
	s, sender := h.session(), h.session()
	wantStatus(t, h.do(s, "listen", "a", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "listen", "b", "g"), vocab.StatusOK)
	wantStatus(t, h.do(s, "listen", "a", ""), vocab.StatusOK) // duplicate: idempotent, not counted
	wantStatus(t, h.do(s, "listen", "c", ""), vocab.StatusError)
	h.close(s)
	wantInt(t, h.do(sender, "signal", "a", "x"), 0)
	wantInt(t, h.do(sender, "signal", "b", "x"), 0)
	h.wantNothing(s)
}

// MaxRegistrations bounds listen + watch + observe together in every
// profile, whatever --max-subscriptions says, so a client registering
// ever new patterns cannot grow the server; closing a registration frees
// room, and re-registering an existing one is never refused.
func TestRegistrationCap(t *testing.T) {
	for _, rf := range []bool{false, true} {
		h := newHarness(t, Config{Profile: rfProfile(rf), MaxRegistrations: 3})
		s, other := h.session(), h.session()
		wantStatus(t, h.do(s, "listen", "a", ""), vocab.StatusOK)
		wantStatus(t, h.do(s, "watch", "b", ""), vocab.StatusOK)
		wantStatus(t, h.do(s, "observe", "c", ""), vocab.StatusOK)
		wantStatus(t, h.do(s, "listen", "d", ""), vocab.StatusError)
		wantStatus(t, h.do(s, "watch", "d", ""), vocab.StatusError)
		wantStatus(t, h.do(s, "observe", "d", ""), vocab.StatusError)
		wantStatus(t, h.do(s, "listen", "a", ""), vocab.StatusOK) // already registered
		wantStatus(t, h.do(s, "watch", "b", ""), vocab.StatusOK)
		wantStatus(t, h.do(other, "listen", "d", ""), vocab.StatusOK) // per session
		wantStatus(t, h.do(s, "unwatch", "b", ""), vocab.StatusOK)
		wantStatus(t, h.do(s, "listen", "d", ""), vocab.StatusOK)
		wantInt(t, h.do(other, "signal", "d", "x"), 2)
	}
	// Negative means unlimited.
	h := newHarness(t, Config{MaxRegistrations: -1})
	s := h.session()
	for i := range 2000 {
		wantStatus(t, h.do(s, "listen", fmt.Sprintf("p%d", i), ""), vocab.StatusOK)
	}
}
