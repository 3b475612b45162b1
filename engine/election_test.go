package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
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
	wantStatus(t, h.do(obs, "observe", "svc", ""), vocab.StatusOK)
	h.wantNothing(obs) // nobody leads yet
	ta := wantGrant(t, h.do(a, "elect", "svc", "0 10"), 10)
	h.wantPushes(obs, "leader elected svc")
	h.wantNothing(a) // the winner is not told of its own election
	wantBlocked(t, h.do(b, "elect", "svc", "10 10"))

	wantStatus(t, h.do(a, "resign", "svc", ta), vocab.StatusOK)
	h.wantPushes(obs, "leader resigned svc", "leader failover svc", "leader elected svc")
	h.wantNothing(a) // its holder registration went with the resign
	g := h.wantDelivered(b, vocab.StatusOK)
	if g.Kind != KindGrant || g.Lease != 10 {
		t.Fatalf("b's grant %+v", g)
	}

	// The new leader is a watcher now; the old one is not.
	wantStatus(t, h.do(b, "resign", "svc", tok(g)), vocab.StatusOK)
	h.wantPushes(obs, "leader resigned svc")
	h.wantNothing(a)
	h.wantNothing(b)
	wantStatus(t, h.do(b, "resign", "svc", tok(g)), vocab.StatusError) // not held any more
}

func TestElectIsTheLockOfTheSameName(t *testing.T) {
	h := newHarness(t, Config{})
	obs, a, b := h.session(), h.session(), h.session()
	wantStatus(t, h.do(obs, "observe", "db", ""), vocab.StatusOK)
	ta := wantGrant(t, h.do(a, "elect", "db", "0 5"), 5)
	h.wantPushes(obs, "leader elected db")
	wantStatus(t, h.do(b, "l", "db", "0"), vocab.StatusTimeout)
	wantStatus(t, h.do(b, "rl", "db", "0"), vocab.StatusErrorTypeMismatch)
	wantStatus(t, h.do(b, "elect", "db", "0"), vocab.StatusTimeout)
	// n renews an elected lease; r releases it without a resigned push.
	if r := h.do(a, "n", "db", ta+" 7"); r.Status != vocab.StatusOK || r.Lease != 7 {
		t.Fatalf("renew %+v", r)
	}
	wantBlocked(t, h.do(b, "l", "db", "10"))
	wantStatus(t, h.do(a, "r", "db", ta), vocab.StatusOK)
	// A plain l waiter granted a limit-1 lock with watchers is a failover,
	// but not an election.
	h.wantPushes(obs, "leader failover db")
	// a released with r, so it is still registered as a (former) holder.
	h.wantPushes(a, "leader failover db")
	tb := tok(h.wantDelivered(b, vocab.StatusOK))
	wantStatus(t, h.do(b, "r", "db", tb), vocab.StatusOK)
	c := h.session()
	wantGrant(t, h.do(c, "elect", "db", "0"), 33)
	h.wantPushes(obs, "leader elected db")
	h.wantPushes(a, "leader elected db")
	h.wantNothing(c)
}

func TestLeaderExpiryAndDisconnect(t *testing.T) {
	h := newHarness(t, Config{})
	obs, a, b := h.session(), h.session(), h.session()
	wantStatus(t, h.do(obs, "observe", "x", ""), vocab.StatusOK)
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
	h.wantDelivered(b, vocab.StatusOK)

	// The leader disconnects with a waiter: failover to the others, and
	// nothing at all to the closed session.
	c := h.session()
	wantBlocked(t, h.do(c, "elect", "x", "10 30"))
	h.close(b)
	h.wantNothing(b)
	h.wantPushes(obs, "leader failover x", "leader elected x")
	h.wantPushes(a, "leader failover x", "leader elected x")
	h.wantDelivered(c, vocab.StatusOK)

	// A closed session's registrations are gone: c's later resign reaches
	// a and obs only, and no entry for b is left behind.
	h.close(a)
	wantStatus(t, h.do(obs, "unobserve", "x", ""), vocab.StatusOK)
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
		wantStatus(t, h.do(obs, "observe", "k", ""), vocab.StatusOK)
		h.wantPushes(obs, "leader elected k")
		wantStatus(t, h.do(obs, "observe", "k", ""), vocab.StatusOK)
		if rf {
			// dflockd's redis-feats line answers every observe of a held
			// name with the push (spec §I.2 O4).
			h.wantPushes(obs, "leader elected k")
		} else {
			h.wantNothing(obs)
		}
		wantStatus(t, h.do(obs, "unobserve", "k", ""), vocab.StatusOK)
		wantStatus(t, h.do(obs, "unobserve", "k", ""), vocab.StatusOK) // idempotent
		c := h.session()
		wantBlocked(t, h.do(c, "elect", "k", "5"))
		h.close(a)
		h.wantNothing(obs)
		h.wantDelivered(c, vocab.StatusOK)
	}
}

func TestElectionWatchEvents(t *testing.T) {
	h := newHarness(t, Config{})
	w, a := h.session(), h.session()
	wantStatus(t, h.do(w, "watch", "e.>", ""), vocab.StatusOK)
	ta := wantGrant(t, h.do(a, "elect", "e.1", "0"), 33)
	wantStatus(t, h.do(a, "resign", "e.1", "0123"), vocab.StatusError)
	wantStatus(t, h.do(a, "resign", "e.1", ta), vocab.StatusOK)
	tl := wantGrant(t, h.do(a, "l", "e.1", "0"), 33)
	wantStatus(t, h.do(a, "r", "e.1", tl), vocab.StatusOK)
	h.wantPushes(w, "watch elect e.1", "watch resign e.1", "watch acquire e.1", "watch release e.1")
}

func TestObserveCountsAgainstMaxSubscriptions(t *testing.T) {
	h := newHarness(t, Config{Profile: vocab.ProfileRF, MaxSubscriptions: 2})
	s := h.session()
	wantStatus(t, h.do(s, "observe", "a", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "watch", "b", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "observe", "c", ""), vocab.StatusError)
	wantStatus(t, h.do(s, "listen", "d", ""), vocab.StatusError)
	wantStatus(t, h.do(s, "observe", "a", ""), vocab.StatusOK) // already registered
	wantStatus(t, h.do(s, "unobserve", "a", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "listen", "d", ""), vocab.StatusOK)
}

// A resign by another session holding the leader's token ends the leader's
// holder registration, as dflockd's redis-feats line does: the former
// leader gets no resigned push (and no later ones), an observing resigner
// gets it as every observer does.
func TestResignByAnotherSession(t *testing.T) {
	for _, rf := range []bool{false, true} {
		h := newHarness(t, Config{Profile: rfProfile(rf)})
		obs, leader, resigner, next := h.session(), h.session(), h.session(), h.session()
		wantStatus(t, h.do(obs, "observe", "svc", ""), vocab.StatusOK)
		wantStatus(t, h.do(resigner, "observe", "svc", ""), vocab.StatusOK)
		tl := wantGrant(t, h.do(leader, "elect", "svc", "0 10"), 10)
		h.wantPushes(obs, "leader elected svc")
		h.wantPushes(resigner, "leader elected svc")
		wantStatus(t, h.do(resigner, "resign", "svc", tl), vocab.StatusOK)
		h.wantPushes(obs, "leader resigned svc")
		h.wantPushes(resigner, "leader resigned svc")
		h.wantNothing(leader)
		// The former leader watches no more: a new election passes it by.
		wantGrant(t, h.do(next, "elect", "svc", "0 10"), 10)
		h.wantPushes(obs, "leader elected svc")
		h.wantNothing(leader)
	}
}
