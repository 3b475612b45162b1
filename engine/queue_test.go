package engine

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// describe is an effect as text, for comparing engines' outputs.
func describe(fx *Effects) []string {
	var out []string
	for _, f := range fx.List {
		r := f.Result
		tok := "-"
		if r.Kind == KindGrant {
			tok = string(r.Token.Append(nil))
		}
		out = append(out, fmt.Sprintf("%#x %v kind=%d tok=%s int=%d push=%+v caused=%d",
			uint64(f.To), r.Status, r.Kind, tok, r.Int, r.Push, f.Caused))
	}
	return out
}

// TestQueueBehindWaitAcrossSnapshot: a session's requests sent while its
// request waits are not run (queue.go): they queue, survive a snapshot
// and restore, and when the wait ends run in the order they were sent,
// in the same Apply, each answered by a late reply after the one that
// ended the wait; one that waits in turn holds back the rest. Restored
// and original engines agree throughout.
func TestQueueBehindWaitAcrossSnapshot(t *testing.T) {
	h := newHarness(t, Config{Shards: 4, Profile: vocab.ProfileRF})
	a, b, c, d := h.session(), h.session(), h.session(), h.session()
	tokK := wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	tokK2 := wantGrant(t, h.do(c, "l", "k2", "0 30"), 30)
	wantStatus(t, h.do(d, "listen", "ch", ""), vocab.StatusOK)
	wantBlocked(t, h.do(b, "l", "k", "10 30")) // waits for a's release
	for _, q := range [][3]string{
		{"incr", "n", "1"},
		{"signal", "ch", "hi"}, // d listens: one push
		{"l", "k2", "10 30"},   // waits in turn, for c's release
		{"incr", "n", "1"},     // behind that one
	} {
		wantBlocked(t, h.do(b, q[0], q[1], q[2]))
	}
	if got := h.do(a, "get", "n", ""); got.Status != vocab.StatusOK || got.Int != 0 {
		t.Fatalf("get n = %+v: b's queued incr ran while its lock waited", got)
	}
	h.wantNothing(b)
	if n := h.eng.Queued(b); n != 4 {
		t.Fatalf("Queued(b) = %d, want 4", n)
	}

	var snap bytes.Buffer
	if err := h.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	cfg := h.eng.cfg
	cfg.Shards = 16
	restored, err := Restore(cfg, bytes.NewReader(snap.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != h.eng.Digest() || restored.Queued(b) != 4 {
		t.Fatalf("restored engine differs (queued %d)", restored.Queued(b))
	}

	// a releases k: b's grant, then its incr (1), its signal (1 receiver,
	// the push right after), and its lock of k2, which waits.
	release := func(s SessionID, key, tok string) (Result, []string) {
		cmd := Command{Kind: KindRequest, Session: s, At: h.clock.Now(),
			Req: vocab.Request{Op: vocab.OpRelease, Key: []byte(key), Token: []byte(tok)}}
		var fx, rfx Effects
		r := h.eng.Apply(&cmd, &fx)
		rr := restored.Apply(&cmd, &rfx)
		got, rgot := describe(&fx), describe(&rfx)
		if fmt.Sprintf("%+v", r) != fmt.Sprintf("%+v", rr) || fmt.Sprint(got) != fmt.Sprint(rgot) {
			t.Fatalf("release of %s: the restored engine answered %+v %q, the original %+v %q", key, rr, rgot, r, got)
		}
		return r, got
	}
	r, got := release(a, "k", tokK)
	wantStatus(t, r, vocab.StatusOK)
	if len(got) != 4 {
		t.Fatalf("release of k made %q; want b's grant, incr, signal and d's push", got)
	}
	want := []string{
		fmt.Sprintf("%#x ok kind=%d", uint64(b), KindGrant),
		fmt.Sprintf("%#x ok kind=%d tok=- int=1", uint64(b), KindInt),
		fmt.Sprintf("%#x ok kind=%d", uint64(b), KindReceivers),
		fmt.Sprintf("%#x ok kind=%d", uint64(d), KindPush),
	}
	for i, w := range want {
		if len(got[i]) < len(w) || got[i][:len(w)] != w {
			t.Fatalf("effect %d is %q, want it to start %q; all: %q", i, got[i], w, got)
		}
	}
	if !bytes.HasSuffix([]byte(got[2]), []byte("caused=1")) {
		t.Fatalf("the signal's reply %q does not count its push", got[2])
	}
	if h.eng.Queued(b) != 1 || restored.Queued(b) != 1 {
		t.Fatalf("queued after k's grant: %d (restored %d); want the last incr", h.eng.Queued(b), restored.Queued(b))
	}
	// c releases k2: b's grant of it, then the last incr (2).
	_, got = release(c, "k2", tokK2)
	grantB := fmt.Sprintf("%#x ok kind=%d", uint64(b), KindGrant)
	if len(got) != 2 || len(got[0]) < len(grantB) || got[0][:len(grantB)] != grantB ||
		got[1] != fmt.Sprintf("%#x ok kind=%d tok=- int=2 push={Kind:0 A: B:} caused=0", uint64(b), KindInt) {
		t.Fatalf("release of k2 made %q; want b's grant and its incr (2)", got)
	}
	if h.eng.Queued(b) != 0 || restored.Queued(b) != 0 || restored.Digest() != h.eng.Digest() {
		t.Fatal("after the queue ran: queues left, or the engines differ")
	}
}

// TestQueueRunsAfterCancelAndDropsOnClose: a withdrawn wait (KindCancel)
// lets the queue run; a close drops what is queued without running it.
func TestQueueRunsAfterCancelAndDropsOnClose(t *testing.T) {
	h := newHarness(t, Config{Shards: 2, Profile: vocab.ProfileRF})
	a, b, c := h.session(), h.session(), h.session()
	wantGrant(t, h.do(a, "l", "k", "0 30"), 30)
	wantBlocked(t, h.do(b, "l", "k", "10 30"))
	wantBlocked(t, h.do(b, "incr", "n", "5"))
	if r := h.run(Command{Kind: KindCancel, Session: b}); r.Int != 1 {
		t.Fatalf("cancel: %+v", r)
	}
	if got := h.rec.take(b); len(got) != 1 || got[0].Kind != KindInt || got[0].Int != 5 {
		t.Fatalf("after the cancel b got %+v; want its incr's answer (5)", got)
	}
	wantBlocked(t, h.do(c, "l", "k", "10 30"))
	wantBlocked(t, h.do(c, "incr", "n", "1"))
	h.close(c)
	if got := h.do(a, "get", "n", ""); got.Int != 5 {
		t.Fatalf("get n = %+v: c's queued incr ran after its close", got)
	}
}
