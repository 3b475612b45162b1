package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
)

func (h *harness) wantPushes(s SessionID, want ...string) {
	h.t.Helper()
	if got := h.pushes(s); !slices.Equal(got, want) {
		h.t.Fatalf("pushes\n got %q\nwant %q", got, want)
	}
}

func TestElectResignFailoverElected(t *testing.T) {
	h := newHarness(t, Config{})
	obs, a, b := h.session(), h.session(), h.session()
	wantStatus(t, h.do(obs, "observe", "svc", ""), parse.StatusOK)
	h.wantNothing(obs) // nobody leads yet
	ta := wantGrant(t, h.do(a, "elect", "svc", "0 10"), 10)
	h.wantPushes(obs, "leader elected svc")
	h.wantNothing(a) // the winner is not told of its own election
	wantBlocked(t, h.do(b, "elect", "svc", "10 10"))

	wantStatus(t, h.do(a, "resign", "svc", ta), parse.StatusOK)
	h.wantPushes(obs, "leader resigned svc", "leader failover svc", "leader elected svc")
	h.wantNothing(a) // its holder registration went with the resign
	g := h.wantDelivered(b, parse.StatusOK)
	if g.Kind != KindGrant || g.Lease != 10 {
		t.Fatalf("b's grant %+v", g)
	}

	// The new leader is a watcher now; the old one is not.
	wantStatus(t, h.do(b, "resign", "svc", tok(g)), parse.StatusOK)
	h.wantPushes(obs, "leader resigned svc")
	h.wantNothing(a)
	h.wantNothing(b)
	wantStatus(t, h.do(b, "resign", "svc", tok(g)), parse.StatusError) // not held any more
}

func TestElectIsTheLockOfTheSameName(t *testing.T) {
	h := newHarness(t, Config{})
	obs, a, b := h.session(), h.session(), h.session()
	wantStatus(t, h.do(obs, "observe", "db", ""), parse.StatusOK)
	ta := wantGrant(t, h.do(a, "elect", "db", "0 5"), 5)
	h.wantPushes(obs, "leader elected db")
	wantStatus(t, h.do(b, "l", "db", "0"), parse.StatusTimeout)
	wantStatus(t, h.do(b, "rl", "db", "0"), parse.StatusErrorTypeMismatch)
	wantStatus(t, h.do(b, "elect", "db", "0"), parse.StatusTimeout)
	// n renews an elected lease; r releases it without a resigned push.
	if r := h.do(a, "n", "db", ta+" 7"); r.Status != parse.StatusOK || r.Lease != 7 {
		t.Fatalf("renew %+v", r)
	}
	wantBlocked(t, h.do(b, "l", "db", "10"))
	wantStatus(t, h.do(a, "r", "db", ta), parse.StatusOK)
	// A plain l waiter granted a limit-1 lock with watchers is a failover,
	// but not an election.
	h.wantPushes(obs, "leader failover db")
	// a released with r, so it is still registered as a (former) holder.
	h.wantPushes(a, "leader failover db")
	tb := tok(h.wantDelivered(b, parse.StatusOK))
	wantStatus(t, h.do(b, "r", "db", tb), parse.StatusOK)
	c := h.session()
	wantGrant(t, h.do(c, "elect", "db", "0"), 33)
	h.wantPushes(obs, "leader elected db")
	h.wantPushes(a, "leader elected db")
	h.wantNothing(c)
}

func TestLeaderExpiryAndDisconnect(t *testing.T) {
	h := newHarness(t, Config{})
	obs, a, b := h.session(), h.session(), h.session()
	wantStatus(t, h.do(obs, "observe", "x", ""), parse.StatusOK)
	wantGrant(t, h.do(a, "elect", "x", "0 1"), 1)
	h.wantPushes(obs, "leader elected x")
	// A lease that ends with nobody waiting changes no leadership.
	h.advance(time.Second)
	h.wantNothing(obs)

	wantGrant(t, h.do(a, "elect", "x", "0 1"), 1)
	h.wantPushes(obs, "leader elected x")
	wantBlocked(t, h.do(b, "elect", "x", "10 30"))
	h.advance(time.Second) // expiry hands over
	h.wantPushes(obs, "leader failover x", "leader elected x")
	h.wantPushes(a, "leader failover x", "leader elected x") // still a holder watcher
	h.wantDelivered(b, parse.StatusOK)

	// The leader disconnects with a waiter: failover to the others, and
	// nothing at all to the closed session.
	c := h.session()
	wantBlocked(t, h.do(c, "elect", "x", "10 30"))
	h.close(b)
	h.wantNothing(b)
	h.wantPushes(obs, "leader failover x", "leader elected x")
	h.wantPushes(a, "leader failover x", "leader elected x")
	h.wantDelivered(c, parse.StatusOK)

	// A closed session's registrations are gone: c's later resign reaches
	// a and obs only, and no entry for b is left behind.
	h.close(a)
	wantStatus(t, h.do(obs, "unobserve", "x", ""), parse.StatusOK)
	sh := h.eng.shardFor([]byte("x"))
	if el := sh.elections["x"]; el == nil || len(el.watchers) != 1 || el.watchers[0].sess.id != c {
		t.Fatalf("watchers left: %+v", el)
	}
	h.close(c)
	if _, ok := sh.elections["x"]; ok {
		t.Fatal("election entry kept after its last watcher closed")
	}
}

func TestObserveRepeats(t *testing.T) {
	for _, rf := range []bool{false, true} {
		h := newHarness(t, Config{Profile: rfProfile(rf)})
		obs, a := h.session(), h.session()
		wantGrant(t, h.do(a, "elect", "k", "0"), 33)
		wantStatus(t, h.do(obs, "observe", "k", ""), parse.StatusOK)
		h.wantPushes(obs, "leader elected k")
		wantStatus(t, h.do(obs, "observe", "k", ""), parse.StatusOK)
		if rf {
			// dflockd's redis-feats line answers every observe of a held
			// name with the push (spec §I.2 O4).
			h.wantPushes(obs, "leader elected k")
		} else {
			h.wantNothing(obs)
		}
		wantStatus(t, h.do(obs, "unobserve", "k", ""), parse.StatusOK)
		wantStatus(t, h.do(obs, "unobserve", "k", ""), parse.StatusOK) // idempotent
		c := h.session()
		wantBlocked(t, h.do(c, "elect", "k", "5"))
		h.close(a)
		h.wantNothing(obs)
		h.wantDelivered(c, parse.StatusOK)
	}
}

func TestElectionWatchEvents(t *testing.T) {
	h := newHarness(t, Config{})
	w, a := h.session(), h.session()
	wantStatus(t, h.do(w, "watch", "e.>", ""), parse.StatusOK)
	ta := wantGrant(t, h.do(a, "elect", "e.1", "0"), 33)
	wantStatus(t, h.do(a, "resign", "e.1", "0123"), parse.StatusError)
	wantStatus(t, h.do(a, "resign", "e.1", ta), parse.StatusOK)
	tl := wantGrant(t, h.do(a, "l", "e.1", "0"), 33)
	wantStatus(t, h.do(a, "r", "e.1", tl), parse.StatusOK)
	h.wantPushes(w, "watch elect e.1", "watch resign e.1", "watch acquire e.1", "watch release e.1")
}

func TestObserveCountsAgainstMaxSubscriptions(t *testing.T) {
	h := newHarness(t, Config{Profile: parse.ProfileRF, MaxSubscriptions: 2})
	s := h.session()
	wantStatus(t, h.do(s, "observe", "a", ""), parse.StatusOK)
	wantStatus(t, h.do(s, "watch", "b", ""), parse.StatusOK)
	wantStatus(t, h.do(s, "observe", "c", ""), parse.StatusError)
	wantStatus(t, h.do(s, "listen", "d", ""), parse.StatusError)
	wantStatus(t, h.do(s, "observe", "a", ""), parse.StatusOK) // already registered
	wantStatus(t, h.do(s, "unobserve", "a", ""), parse.StatusOK)
	wantStatus(t, h.do(s, "listen", "d", ""), parse.StatusOK)
}

// A resign by another session holding the leader's token ends the leader's
// holder registration, as dflockd's redis-feats line does: the former
// leader gets no resigned push (and no later ones), an observing resigner
// gets it as every observer does.
func TestResignByAnotherSession(t *testing.T) {
	for _, rf := range []bool{false, true} {
		h := newHarness(t, Config{Profile: rfProfile(rf)})
		obs, leader, resigner, next := h.session(), h.session(), h.session(), h.session()
		wantStatus(t, h.do(obs, "observe", "svc", ""), parse.StatusOK)
		wantStatus(t, h.do(resigner, "observe", "svc", ""), parse.StatusOK)
		tl := wantGrant(t, h.do(leader, "elect", "svc", "0 10"), 10)
		h.wantPushes(obs, "leader elected svc")
		h.wantPushes(resigner, "leader elected svc")
		wantStatus(t, h.do(resigner, "resign", "svc", tl), parse.StatusOK)
		h.wantPushes(obs, "leader resigned svc")
		h.wantPushes(resigner, "leader resigned svc")
		h.wantNothing(leader)
		// The former leader watches no more: a new election passes it by.
		wantGrant(t, h.do(next, "elect", "svc", "0 10"), 10)
		h.wantPushes(obs, "leader elected svc")
		h.wantNothing(leader)
	}
}
