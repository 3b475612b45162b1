package httpapi

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A client that goes away while its call waits: the wait is withdrawn
// (engine.KindCancel), so the lock goes to the next in line, not to a
// caller nobody hears; and a grant that raced the withdrawal is released.

func TestClientGoneWithdrawsItsWait(t *testing.T) {
	ts := newServer(t, setup{})
	holder, quitter, next := ts.newSession(), ts.newSession(), ts.newSession()
	h := ts.lock(holder, "k", 0)
	ctx, cancel := context.WithCancel(context.Background())
	gone := async(func() error {
		_, err := ts.trySend(req{method: "POST", path: "/v1/locks/k", body: map[string]int{"acquire_timeout_s": 60}, session: quitter, ctx: ctx})
		return err
	})
	eventually(t, "the quitter to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	// Another session's two-phase wait queues behind the quitter.
	ts.call(next, "/v1/locks/k/enqueue", nil)
	cancel()
	if err := await(t, "the quitter's request", gone); !errors.Is(err, context.Canceled) {
		t.Fatalf("the quitter's request ended with %v, want its context's cancel", err)
	}
	eventually(t, "the quitter's wait to be withdrawn", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	ts.release(holder, "k", h.Token)
	// The lock skipped the quitter: the next in line holds it.
	if g := ts.call(next, "/v1/locks/k/wait", map[string]int{"timeout_s": 0}); g.Status != "ok" {
		t.Fatalf("the session behind the quitter: %+v, want the grant", g)
	}
	// The quitter's session lives on, and its call was counted as 408.
	expect(t, "ping the quitter", ts.send(req{method: "POST", path: "/v1/sessions/" + quitter + "/ping"}), 204, "")
	eventually(t, "the 408 to be counted", func() bool {
		return counter(t, ts, "dflockd_http_requests_total", map[string]string{"method": "POST", "path": "/v1/locks/{key}", "status": "408"}) == 1
	})
}

// openDirect opens a session as POST /v1/sessions does, for the tests
// that drive call's branches by hand.
func openDirect(t *testing.T, ts *testServer) *httpSession {
	t.Helper()
	s, refused := ts.api.open(netip.MustParseAddr("127.0.0.1"), "")
	if s == nil {
		t.Fatal(refused)
	}
	return s
}

// The withdrawal finds nothing parked because the grant is already on
// its way (Int 0): the call takes the grant and releases it.
func TestWithdrawAfterTheGrantRaced(t *testing.T) {
	ts := newServer(t, setup{})
	holder := ts.newSession()
	h := ts.lock(holder, "k", 0)
	s := openDirect(t, ts)
	lock := vocab.Request{Op: vocab.OpLock, Key: []byte("k"), Timeout: 60}
	if r, done := ts.api.start(s, &engine.Command{Kind: engine.KindRequest, Session: s.conn, Req: lock}); done || !r.Blocked {
		t.Fatalf("lock of a held key: %+v, want parked", r)
	}
	before, _ := ts.lockStat("k")
	ts.release(holder, "k", h.Token) // the grant is posted to s
	eventually(t, "the grant to reach the session", func() bool { return s.replies.arrived() == 1 })
	if st, held := ts.lockStat("k"); !held || st.OwnerConnID == before.OwnerConnID {
		t.Fatalf("k after the holder's release: %+v, want it held by the session", st)
	}
	res, end := ts.api.withdraw(s, &lock, clientGone)
	if end != clientGone || res.Kind != engine.KindGrant {
		t.Fatalf("withdraw: %+v %v, want the raced grant and clientGone", res, end)
	}
	if _, held := ts.lockStat("k"); held {
		t.Fatal("the grant nobody will see is still held")
	}
	if n := s.replies.arrived(); n != 0 {
		t.Fatalf("%d answers were left behind", n)
	}
}

// An enqueue answered after its client left: queued, it leaves the queue;
// granted meanwhile, the grant is released.
func TestAbandonedEnqueue(t *testing.T) {
	ts := newServer(t, setup{})
	holder := ts.newSession()
	h := ts.lock(holder, "k", 0)
	s := openDirect(t, ts)
	enq := vocab.Request{Op: vocab.OpEnqueue, Key: []byte("k")}
	apply := func() engine.Result { return ts.api.do(s, &enq) }
	res := apply()
	if res.Status != vocab.StatusQueued {
		t.Fatalf("enqueue: %+v", res)
	}
	ts.api.abandon(s, &enq, &res)
	if st, _ := ts.lockStat("k"); st.Waiters != 0 {
		t.Fatalf("%d waiters after an abandoned enqueue, want 0", st.Waiters)
	}
	// Queued again; the holder releases, so the slot is s's before the
	// abandon looks: it is released.
	if res = apply(); res.Status != vocab.StatusQueued {
		t.Fatalf("enqueue: %+v", res)
	}
	before, _ := ts.lockStat("k")
	ts.release(holder, "k", h.Token)
	if st, held := ts.lockStat("k"); !held || st.OwnerConnID == before.OwnerConnID {
		t.Fatalf("k after the holder's release: %+v, want it held by the session", st)
	}
	ts.api.abandon(s, &enq, &res)
	if _, held := ts.lockStat("k"); held {
		t.Fatal("an abandoned enqueue's grant is still held")
	}
	// And an enqueue that acquired at once is released.
	if res = apply(); res.Status != vocab.StatusAcquired {
		t.Fatalf("enqueue of a free key: %+v", res)
	}
	ts.api.abandon(s, &enq, &res)
	if _, held := ts.lockStat("k"); held {
		t.Fatal("an abandoned fast-path enqueue is still held")
	}
}

// A call that waits for its session's turn and whose client leaves ends
// without running; the call before it is not disturbed.
func TestClientGoneWhileWaitingForItsTurn(t *testing.T) {
	ts := newServer(t, setup{})
	holder, s := ts.newSession(), ts.newSession()
	h := ts.lock(holder, "k", 0)
	first := async(func() grant { return ts.lock(s, "k", 60) })
	eventually(t, "the first call to queue", func() bool { st, _ := ts.lockStat("k"); return st.Waiters == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	second := async(func() error {
		_, err := ts.trySend(req{method: "POST", path: "/v1/locks/other", body: "{}", session: s, ctx: ctx})
		return err
	})
	sess := ts.api.sessions.lookup(s)
	ts.api.sessions.done(sess, ts.hub.Clock().Now())
	eventually(t, "the second call to reach the server", func() bool { return sess.inFlight.Load() == 2 })
	cancel()
	if err := await(t, "the second call", second); !errors.Is(err, context.Canceled) {
		t.Fatalf("the second call ended with %v, want its context's cancel", err)
	}
	eventually(t, "the second call's 408 to be counted", func() bool {
		return counter(t, ts, "dflockd_http_requests_total", map[string]string{"method": "POST", "path": "/v1/locks/{key}", "status": "408"}) == 1
	})
	if _, held := ts.lockStat("other"); held {
		t.Fatal("the abandoned call ran")
	}
	ts.release(holder, "k", h.Token)
	if g := await(t, "the first call", first); g.Status != "ok" {
		t.Fatalf("the first call: %+v", g)
	}
}
