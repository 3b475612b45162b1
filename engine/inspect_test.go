package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/dflockd-ng/dflockd/deadlock"
	"github.com/dflockd-ng/dflockd/vocab"
)

func (h *harness) inspect(key string) []KeyState { return h.eng.InspectKey(h.clock.Now(), key) }

// Pages cover every matching key once, in order, whatever the shard
// count; the kind filter and the prefix select.
func TestInspectKeysPages(t *testing.T) {
	h := newHarness(t, Config{Shards: 8})
	a := h.session()
	for i := range 25 {
		wantGrant(t, h.do(a, "l", fmt.Sprintf("job/%02d", i), "0 10"), 10)
	}
	h.do(a, "incr", "job/ctr", "1")
	h.do(a, "sl", "other", "0 3 10")
	var got []string
	var after KeyRef
	pages := 0
	for {
		page, next := h.eng.InspectKeys(h.clock.Now(), KeyQuery{Prefix: "job/", After: after, Limit: 10})
		pages++
		for _, ks := range page {
			got = append(got, ks.Kind.String()+":"+ks.Key)
		}
		if next == (KeyRef{}) {
			break
		}
		after = next
		if pages > 10 {
			t.Fatal("the cursor does not advance")
		}
	}
	var want []string
	for i := range 25 {
		want = append(want, fmt.Sprintf("lock:job/%02d", i))
	}
	want = append(want, "counter:job/ctr") // "job/ctr" sorts after "job/24"
	if pages != 3 || !slices.Equal(got, want) {
		t.Fatalf("%d pages: %v\nwant %v", pages, got, want)
	}
	page, _ := h.eng.InspectKeys(h.clock.Now(), KeyQuery{Kinds: KeyKinds(0).With(KeySemaphore).With(KeyCounter)})
	if len(page) != 2 || page[0].Key != "job/ctr" || page[0].Value != 1 || page[1].Key != "other" || page[1].Limit != 3 {
		t.Fatalf("kinds filter: %+v", page)
	}
}

// A key's holders and FIFO, with the observatory's times when it is on.
func TestInspectKeyHoldersAndQueue(t *testing.T) {
	h := newHarness(t, Config{Events: 1024})
	a, b, c := h.session(), h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	h.advance(time.Second)
	wantBlocked(t, h.do(b, "l", "k", "10 30"))
	wantStatus(t, h.do(c, "e", "k", "30"), vocab.StatusQueued)
	h.advance(2 * time.Second)
	h.do(a, "n", "k", tk+" 30")
	h.advance(500 * time.Millisecond)
	ks := h.inspect("k")
	if len(ks) != 1 || ks[0].Kind != KeyLock || ks[0].HoldersTotal != 1 || ks[0].WaitersTotal != 2 {
		t.Fatalf("%+v", ks)
	}
	hs := ks[0].Holders[0]
	if hs.Session != a || !hs.Open || hs.HeldMs != 3500 || hs.WaitedMs != 0 || hs.Renewals != 1 ||
		hs.LeaseMs != 30000 || hs.LeaseRemainingMs != 29500 || hs.Fence == 0 {
		t.Fatalf("holder %+v", hs)
	}
	w := ks[0].Waiters
	if w[0].Session != b || !w[0].Blocked || w[0].WaitedMs != 2500 || w[0].TimeoutRemainingMs != 7500 {
		t.Fatalf("first waiter %+v", w[0])
	}
	if w[1].Session != c || w[1].Blocked || w[1].WaitedMs != 2500 || w[1].TimeoutRemainingMs != -1 {
		t.Fatalf("enqueued waiter %+v", w[1])
	}
	// The hand-off keeps the wait: b queued 2.5 s before its grant.
	h.do(a, "r", "k", tk)
	h.wantDelivered(b, vocab.StatusOK)
	hs = h.inspect("k")[0].Holders[0]
	if hs.Session != b || hs.WaitedMs != 2500 || hs.HeldMs != 0 {
		t.Fatalf("after the hand-off %+v", hs)
	}
	// Without the observatory, the times are unknown, the rest is there.
	h2 := newHarness(t, Config{})
	s := h2.session()
	h2.do(s, "l", "k", "0 30")
	hs = h2.inspect("k")[0].Holders[0]
	if hs.HeldMs != -1 || hs.Renewals != -1 || hs.LeaseRemainingMs != 30000 || h2.eng.EventHead(0) != 0 {
		t.Fatalf("observatory off: %+v", hs)
	}
}

func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind.String())
	}
	return out
}

// The ring records a key's life, each event naming its claim; an expiry
// names the holder that lost the key.
func TestEventsTimeline(t *testing.T) {
	h := newHarness(t, Config{Events: 1024, Shards: 1})
	a, b, c := h.session(), h.session(), h.session()
	tk := wantGrant(t, h.do(a, "l", "k", "0 5"), 5)
	wantBlocked(t, h.do(b, "l", "k", "1 5"))
	h.do(a, "n", "k", tk+" 5")
	h.advance(time.Second) // b times out
	h.wantDelivered(b, vocab.StatusTimeout)
	h.advance(5 * time.Second) // a's lease ends
	wantGrant(t, h.do(c, "l", "k", "0 5"), 5)
	wantBlocked(t, h.do(b, "l", "k", "10 5"))
	h.close(c) // c's hold goes to b
	h.wantDelivered(b, vocab.StatusOK)
	n := h.run(Command{Kind: KindForceRelease, Req: vocab.Request{Op: vocab.OpRelease, Key: []byte("k"), Value: []byte("ops@10.0.0.1")}})
	if n.Int != 1 {
		t.Fatalf("force release: %+v", n)
	}
	evs := h.eng.KeyEvents("k", 100, nil)
	want := []string{"grant", "queue", "renew", "timeout", "expire", "grant", "queue", "disconnect", "grant", "force_release"}
	if !slices.Equal(kinds(evs), want) {
		t.Fatalf("timeline %v\nwant %v", kinds(evs), want)
	}
	if e := evs[4]; e.Session != a || e.Fence == 0 || e.Fence != evs[0].Fence {
		t.Fatalf("the expiry must name a's grant: %+v (grant %+v)", e, evs[0])
	}
	if e := evs[9]; e.Session != b || e.Note != "ops@10.0.0.1" {
		t.Fatalf("force release %+v", e)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq != evs[i-1].Seq+1 || evs[i].At < evs[i-1].At {
			t.Fatalf("events out of order: %+v then %+v", evs[i-1], evs[i])
		}
	}
	if got := h.eng.KeyEvents("k", 3, nil); !slices.Equal(kinds(got), want[7:]) {
		t.Fatalf("the newest three: %v", kinds(got))
	}
}

// A reader that falls behind the ring learns how much it lost.
func TestEventsSinceReportsLoss(t *testing.T) {
	h := newHarness(t, Config{Events: 16, Shards: 1})
	a := h.session()
	for range 20 { // 40 events in a ring of 16
		tk := wantGrant(t, h.do(a, "l", "k", "0 5"), 5)
		h.do(a, "r", "k", tk)
	}
	if h.eng.EventHead(0) != 40 {
		t.Fatalf("head %d", h.eng.EventHead(0))
	}
	evs, lost := h.eng.EventsSince(0, 10, 100, nil)
	if lost != 14 || len(evs) != 16 || evs[0].Seq != 25 || evs[15].Seq != 40 {
		t.Fatalf("lost %d, %d events from %d", lost, len(evs), evs[0].Seq)
	}
	evs, lost = h.eng.EventsSince(0, 38, 100, nil)
	if lost != 0 || len(evs) != 2 || evs[0].Kind != EventGrant || evs[1].Kind != EventRelease {
		t.Fatalf("tail: lost %d %+v", lost, evs)
	}
}

// A forced release hands the key on; the old holder's token then holds
// nothing, so its renew and release answer error.
func TestForceRelease(t *testing.T) {
	for _, profile := range []vocab.Profile{vocab.ProfileV2, vocab.ProfileRF} {
		h := newHarness(t, Config{Profile: profile})
		a, b := h.session(), h.session()
		r := h.do(a, "l", "k", "0 30")
		tk := tok(r)
		wantBlocked(t, h.do(b, "l", "k", "10 30"))
		if n := h.run(Command{Kind: KindForceRelease, Req: vocab.Request{Op: vocab.OpRelease, Key: []byte("k")}}).Int; n != 1 {
			t.Fatalf("%v: released %d", profile, n)
		}
		h.wantDelivered(b, vocab.StatusOK)
		wantStatus(t, h.do(a, "n", "k", tk+" 30"), vocab.StatusError)
		wantStatus(t, h.do(a, "r", "k", tk), vocab.StatusError)
		// A fence that holds nothing releases nothing; a missing key neither.
		if n := h.run(Command{Kind: KindForceRelease, Fence: 1, Req: vocab.Request{Op: vocab.OpRelease, Key: []byte("k")}}).Int; n != 0 {
			t.Fatalf("wrong fence released %d", n)
		}
		if n := h.run(Command{Kind: KindForceRelease, Req: vocab.Request{Op: vocab.OpSemRelease, Key: []byte("none")}}).Int; n != 0 {
			t.Fatalf("missing key released %d", n)
		}
	}
}

// The engine's wait-for snapshot of two crossed sessions is a deadlock.
func TestWaitGraphCrossedLocks(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "l", "x", "0 30"), 30)
	wantGrant(t, h.do(b, "l", "y", "0 30"), 30)
	wantBlocked(t, h.do(a, "l", "y", "60 30"))
	if got := deadlock.Find(h.eng.WaitGraph()); got != nil {
		t.Fatalf("one wait is no deadlock: %+v", got)
	}
	wantBlocked(t, h.do(b, "l", "x", "60 30"))
	wantBlocked(t, h.do(c, "l", "x", "60 30"))
	got := deadlock.Find(h.eng.WaitGraph())
	if len(got) != 1 || !slices.Equal(got[0].Sessions, []uint64{uint64(a), uint64(b)}) ||
		!slices.Equal(got[0].Behind, []uint64{uint64(c)}) || len(got[0].Keys) != 2 {
		t.Fatalf("got %+v", got)
	}
	h.close(b) // y goes to a, which can act again: c waits behind a free holder
	if got := deadlock.Find(h.eng.WaitGraph()); got != nil {
		t.Fatalf("after the close: %+v", got)
	}
}

func TestSessionOpened(t *testing.T) {
	h := newHarness(t, Config{})
	h.advance(1500 * time.Millisecond)
	s := h.session()
	at, open, known := h.eng.SessionOpened(s)
	if !open || !known || at != h.clock.Now().Tick() {
		t.Fatalf("opened %d %v %v, want %d", at, open, known, h.clock.Now().Tick())
	}
	h.close(s)
	if _, open, _ := h.eng.SessionOpened(s); open {
		t.Fatal("a closed session is open")
	}
}

// The ring's memory is documented per event (Config.Events).
func TestEventSize(t *testing.T) {
	if n := unsafe.Sizeof(Event{}); n > 80 {
		t.Errorf("Event is %d bytes, documented as 80", n)
	}
}
