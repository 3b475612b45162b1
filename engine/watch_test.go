package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

func TestWatchEvents(t *testing.T) {
	h := newHarness(t, Config{})
	w, s := h.session(), h.session()
	wantStatus(t, h.do(w, "watch", "app.>", ""), vocab.StatusOK)
	wantStatus(t, h.do(w, "watch", "app.*", ""), vocab.StatusOK) // overlapping: still one copy
	tk := wantGrant(t, h.do(s, "l", "app.lock", "0 1"), 1)
	wantStatus(t, h.do(s, "r", "app.lock", tk), vocab.StatusOK)
	wantStatus(t, h.do(s, "r", "app.lock", tk), vocab.StatusError) // failed: no event
	wantStatus(t, h.do(s, "kset", "app.kv", "v"), vocab.StatusOK)
	wantStatus(t, h.do(s, "kdel", "app.kv", ""), vocab.StatusOK)
	wantStatus(t, h.do(s, "kdel", "app.none", ""), vocab.StatusOK) // kdel always emits
	wantStatus(t, h.do(s, "kcas", "app.kv", "x\ty\t"), vocab.StatusCASConflict)
	wantInt(t, h.do(s, "incr", "app.n", "2"), 2)
	wantInt(t, h.do(s, "get", "app.n", ""), 2) // reads emit nothing
	wantInt(t, h.do(s, "rpush", "app.q", "v"), 1)
	wantValue(t, h.do(s, "lpop", "app.q", ""), "v")
	wantStatus(t, h.do(s, "lpop", "app.q", ""), vocab.StatusNil) // nothing popped: no event
	wantGrant(t, h.do(s, "l", "app.lease", "0 1"), 1)
	h.advance(time.Second) // expiry is an implicit release
	wantGrant(t, h.do(s, "l", "other", "0"), 33)
	want := []string{
		"watch acquire app.lock", "watch release app.lock",
		"watch kset app.kv", "watch kdel app.kv", "watch kdel app.none",
		"watch incr app.n", "watch rpush app.q", "watch lpop app.q",
		"watch acquire app.lease", "watch release app.lease",
	}
	if got := h.pushes(w); !slices.Equal(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	wantStatus(t, h.do(w, "unwatch", "app.>", ""), vocab.StatusOK)
	wantStatus(t, h.do(w, "unwatch", "app.*", ""), vocab.StatusOK)
	wantInt(t, h.do(s, "incr", "app.n", "1"), 3)
	h.wantNothing(w)
}

func TestWatchTwoPhaseAndSelf(t *testing.T) {
	h := newHarness(t, Config{})
	w := h.session()
	wantStatus(t, h.do(w, "watch", "k", ""), vocab.StatusOK)
	r := h.do(w, "e", "k", "")
	if r.Status != vocab.StatusAcquired {
		t.Fatalf("%+v", r)
	}
	h.do(w, "w", "k", "1")
	// e+w on the fast path announces the acquire twice (spec §B.10), and
	// a watcher sees its own events.
	if got := h.pushes(w); !slices.Equal(got, []string{"watch acquire k", "watch acquire k"}) {
		t.Fatalf("got %q", got)
	}
	h.close(w) // releases k, but the watch went with the session
	h.wantNothing(w)
}

// In the rf profile a lease that ends with nobody waiting behind it is
// released when its timer fires, as in every profile: the watch release
// push comes from the clock passing the lease's end, with no GC pass, and
// the key is free at once. The expired grant is remembered, so that its
// renew (once, as in dflockd's redis-feats line) answers
// error_lease_expired rather than error (spec §B.0, §I.2 O3; issue #34).
func TestRFLeaseEndReleasesWithoutGC(t *testing.T) {
	h := newHarness(t, Config{Profile: vocab.ProfileRF})
	w, s, o := h.session(), h.session(), h.session()
	wantStatus(t, h.do(w, "watch", "k", ""), vocab.StatusOK)
	tk := wantGrant(t, h.do(s, "l", "k", "0 1"), 1)
	h.wantPushes(w, "watch acquire k")
	h.advance(999 * time.Millisecond)
	h.wantNothing(w) // a lease never ends early
	h.advance(time.Millisecond)
	h.wantPushes(w, "watch release k")
	wantGrant(t, h.do(o, "l", "k", "0 5"), 5) // free without an eviction on the way
	h.wantPushes(w, "watch acquire k")
	wantStatus(t, h.do(s, "n", "k", tk+" 5"), vocab.StatusErrorLeaseExpired)
	wantStatus(t, h.do(s, "n", "k", tk+" 5"), vocab.StatusError) // the record answered once
	h.wantNothing(w)

	// A release by the expired token consumes the record too, and a
	// session's close does not release what already lapsed.
	wantStatus(t, h.do(w, "unwatch", "k", ""), vocab.StatusOK)
	t2 := wantGrant(t, h.do(s, "sl", "sem", "0 2 1"), 1)
	t3 := wantGrant(t, h.do(s, "sl", "sem", "0 2 1"), 1)
	h.advance(time.Second)
	wantStatus(t, h.do(o, "sr", "sem", t2), vocab.StatusError)
	wantStatus(t, h.do(o, "sn", "sem", t2), vocab.StatusError)
	h.close(s)
	wantStatus(t, h.do(o, "sn", "sem", t3), vocab.StatusErrorLeaseExpired)

	// Records are forgotten once the lease ended --gc-max-idle ago, even
	// on a key kept busy.
	t4 := wantGrant(t, h.do(o, "l", "busy", "0 1"), 1)
	h.advance(time.Second)
	var last string
	for range 60 {
		last = wantGrant(t, h.do(w, "l", "busy", "0 1"), 1)
		h.advance(time.Second)
		h.gc()
	}
	wantStatus(t, h.do(o, "n", "busy", t4+" 5"), vocab.StatusError)
	wantStatus(t, h.do(o, "n", "busy", last+" 5"), vocab.StatusErrorLeaseExpired)
}
