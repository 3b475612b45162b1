package engine

import (
	"testing"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// readopt runs an acquire as a session that took over an orphan.
func (h *harness) readopt(s SessionID, cmd, key, arg string) Result {
	h.t.Helper()
	req, err := parse.Parse(parse.Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.run(Command{Kind: KindRequest, Session: s, Req: req, Readopt: true})
}

// TestReadopt: an acquire with Readopt gives a session its own claim
// back — the held token, or its place in the queue (a parked wait or a
// two-phase enqueue) — and is an ordinary acquire otherwise; without
// Readopt, the same acquire queues behind the session's own hold.
func TestReadopt(t *testing.T) {
	h := newHarness(t, Config{})
	a, b, c, d := h.session(), h.session(), h.session(), h.session()
	held := tok(wantGrantOK(t, h.do(a, "l", "k", "0 30")))
	if r := h.do(a, "l", "k", "0 30"); r.Status != vocab.StatusTimeout {
		t.Fatalf("a plain re-acquire of a held key: %v, want timeout", r.Status)
	}
	if got := tok(h.readopt(a, "l", "k", "0 30")); got != held {
		t.Fatalf("readopt of the hold: token %q, want %q", got, held)
	}
	wantStatus(t, h.do(b, "e", "k", "30"), vocab.StatusQueued) // b's place: first
	if r := h.do(c, "l", "k", "30 30"); !r.Blocked {           // c: second
		t.Fatal("c did not wait")
	}
	if r := h.readopt(b, "l", "k", "30 30"); !r.Blocked {
		t.Fatalf("readopt of b's enqueue: %+v, want a wait", r)
	}
	if r := h.readopt(d, "l", "k", "0 30"); r.Status != vocab.StatusTimeout {
		t.Fatalf("readopt with no claim is a plain try-lock: %v", r.Status)
	}
	wantStatus(t, h.do(a, "r", "k", held), vocab.StatusOK)
	if got := h.rec.take(b); len(got) != 1 || got[0].Kind != KindGrant {
		t.Fatalf("b, first in the queue, got %+v", got)
	}
	if got := h.rec.take(c); len(got) != 0 {
		t.Fatalf("c, second, got %+v", got)
	}
}

func wantGrantOK(t *testing.T, r Result) Result {
	t.Helper()
	if r.Kind != KindGrant || r.Status != vocab.StatusOK {
		t.Fatalf("not a grant: %+v", r)
	}
	return r
}
