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
