package engine

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// wantList checks an lrange reply by its JSON encoding.
func wantList(t *testing.T, r Result, json string) {
	t.Helper()
	if got := string(parse.AppendOKList(nil, r.Items)); r.Status != vocab.StatusOK || r.Kind != KindList || got != "ok "+json+"\n" {
		t.Fatalf("got %+v (%q), want list %s", r, got, json)
	}
}

func TestListPushPopRange(t *testing.T) {
	h := newHarness(t, Config{})
	s := h.session()
	wantInt(t, h.do(s, "rpush", "l", "b"), 1)
	wantInt(t, h.do(s, "rpush", "l", "c d"), 2) // values are raw: spaces kept
	wantInt(t, h.do(s, "lpush", "l", "a"), 3)
	for i := 0; i < 10; i++ { // force front growth
		h.do(s, "lpush", "l", "x")
	}
	wantInt(t, h.do(s, "llen", "l", ""), 13)
	for i := 0; i < 10; i++ {
		wantValue(t, h.do(s, "lpop", "l", ""), "x")
	}
	wantList(t, h.do(s, "lrange", "l", "0 -1"), `["a","b","c d"]`)
	wantList(t, h.do(s, "lrange", "l", "-2 10"), `["b","c d"]`)
	wantList(t, h.do(s, "lrange", "l", "2 1"), `[]`)
	wantList(t, h.do(s, "lrange", "none", "0 -1"), `[]`)
	wantValue(t, h.do(s, "rpop", "l", ""), "c d")
	wantValue(t, h.do(s, "lpop", "l", ""), "a")
	wantValue(t, h.do(s, "lpop", "l", ""), "b")
	wantStatus(t, h.do(s, "lpop", "l", ""), vocab.StatusNil)
	if n := h.eng.rfKeys.Load(); n != 0 {
		t.Fatalf("an empty list still counts as %d key(s)", n)
	}
	wantInt(t, h.do(s, "rpush", "h", "<&>"), 1)
	wantList(t, h.do(s, "lrange", "h", "0 0"), `["\u003c\u0026\u003e"]`) // json.Marshal escaping
}

func TestBlockingPop(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c := h.session(), h.session(), h.session()
	wantStatus(t, h.do(a, "blpop", "q", "0"), vocab.StatusNil) // timeout 0: no wait
	wantBlocked(t, h.do(a, "blpop", "q", "5"))
	wantBlocked(t, h.do(b, "brpop", "q", "5"))
	// A push goes to the oldest waiter, whatever the ends; the reply is
	// the list's length (nothing stored).
	wantInt(t, h.do(c, "rpush", "q", "v1"), 0)
	if r := h.wantDelivered(a, vocab.StatusOK); r.Kind != KindValue || r.Value != "v1" {
		t.Fatalf("a got %+v", r)
	}
	h.wantNothing(b)
	h.advance(5 * time.Second)
	h.wantDelivered(b, vocab.StatusNil) // timeout
	if n := h.eng.rfKeys.Load(); n != 0 {
		t.Fatalf("%d keys after the waiters left", n)
	}
	// A waiter whose session closes does not swallow a later push.
	wantBlocked(t, h.do(a, "blpop", "q", "5"))
	h.close(a)
	wantInt(t, h.do(c, "rpush", "q", "kept"), 1)
	h.wantNothing(a)
	wantValue(t, h.do(c, "lpop", "q", ""), "kept")
}

func TestListLimitsAndRFHandOff(t *testing.T) {
	h := newHarness(t, Config{MaxListLength: 2, MaxKeys: 1, Profile: vocab.ProfileRF})
	a, b := h.session(), h.session()
	wantInt(t, h.do(a, "rpush", "l", "1"), 1)
	wantInt(t, h.do(a, "rpush", "l", "2"), 2)
	wantStatus(t, h.do(a, "rpush", "l", "3"), vocab.StatusErrorListFull)
	wantStatus(t, h.do(a, "rpush", "other", "x"), vocab.StatusErrorMaxKeys)
	wantStatus(t, h.do(b, "blpop", "other", "5"), vocab.StatusErrorMaxKeys)
	wantValue(t, h.do(a, "lpop", "l", ""), "1")
	wantValue(t, h.do(a, "lpop", "l", ""), "2")
	wantBlocked(t, h.do(b, "blpop", "l", "5"))
	wantInt(t, h.do(a, "lpush", "l", "v"), 0) // rf: "ok 0" on a hand-off (§I.27)
	h.wantDelivered(b, vocab.StatusOK)
}

func TestDrainCancelsParkedPops(t *testing.T) {
	h := newHarness(t, Config{})
	a := h.session()
	wantBlocked(t, h.do(a, "brpop", "q", "10"))
	h.drain()
	h.wantDelivered(a, vocab.StatusError)
	h.advance(20 * time.Second)
	h.wantNothing(a)
}
