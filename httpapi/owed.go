package httpapi

import (
	"context"
	"sync"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/owed"
	"github.com/dflockd-ng/dflockd/vocab"
)

// An HTTP session runs its calls through the hub's Call, the same on a
// single node and on a cluster member: an answer now, or one owed, which
// the hub Posts to the session (replies). The session does not know which
// mode it is in.

// replies are the answers an HTTP session is owed (session.Endpoint): on
// a single node the late answer of a request that waits, on a cluster
// member one for each request or withdrawal it made, in log order. They
// are kept by the sequencer every protocol uses (internal/owed), under a
// lock since the hub Posts from its own goroutines while the session's
// caller waits on another: a place is reserved for each call that may owe
// one, the answer fills it, and the caller takes it (next). A demotion's
// error_not_leader voids all that is owed (nothing submitted before it
// will be answered): it fills the oldest open place and the rest are
// dropped; an answer nobody is owed (a demotion notice with nothing in
// flight) is dropped. The session's turn makes one call at a time use
// them.
type replies struct {
	mu   sync.Mutex
	owed owed.Queue[engine.Result]
	wake chan struct{} // one slot: something arrived
}

func newReplies() *replies { return &replies{wake: make(chan struct{}, 1)} }

// post is the session's Post, from any goroutine.
func (q *replies) post(r engine.Result) {
	q.mu.Lock()
	p := q.owed.Fill()
	if p == nil {
		q.mu.Unlock()
		return
	}
	*p = r
	if r.Status == vocab.StatusErrorNotLeader {
		q.owed.DropOpen() // the engine never answers that: a demotion
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// expect reserves a place for an answer to come, before the call that
// may owe it (an answer may arrive before the call returns).
func (q *replies) expect() {
	q.mu.Lock()
	q.owed.Reserve(engine.Result{})
	q.mu.Unlock()
}

// unexpect takes back the expect of a call answered at once. If a
// demotion voided it meanwhile, the demotion's notice answered nothing
// and is dropped.
func (q *replies) unexpect() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.owed.Open() > 0 {
		q.owed.Unreserve()
		return
	}
	if n := q.owed.Len(); n > 0 && q.owed.At(n-1).Status == vocab.StatusErrorNotLeader {
		q.owed.Unreserve()
	}
}

// forgive cancels what is still owed: a withdrawal took the request
// that owed it away.
func (q *replies) forgive() {
	q.mu.Lock()
	q.owed.DropOpen()
	q.mu.Unlock()
}

// next waits for the next result; it gives up when ctx ends or gone is
// closed first (nil: never).
func (q *replies) next(ctx context.Context, gone <-chan struct{}) (engine.Result, ending) {
	for {
		q.mu.Lock()
		r, ok := q.owed.Next()
		q.mu.Unlock()
		if ok {
			return r, answered
		}
		select {
		case <-q.wake:
		case <-ctx.Done():
			return engine.Result{}, clientGone
		case <-gone:
			return engine.Result{}, sessionGone
		}
	}
}

// wait is next for an answer that must be taken whoever is waiting: it
// is bounded by the engine, which answers a request that waits once the
// withdrawal has failed to find it, or by the log, which answers every
// submission, or by a demotion, which voids them (a leader that cannot
// commit steps down).
func (q *replies) wait() engine.Result {
	r, _ := q.next(context.Background(), nil)
	return r
}

// arrived reports the answers that came and are not taken yet.
func (q *replies) arrived() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.owed.Ready()
}

// do runs req for s and waits for its answer, whoever is waiting.
func (a *API) do(s *httpSession, req *vocab.Request) engine.Result {
	res, done := a.start(s, &engine.Command{Kind: engine.KindRequest, Session: s.conn, Req: *req})
	if done {
		return res
	}
	return s.replies.wait()
}

// start makes a call of s: its answer now (done), or one more owed.
func (a *API) start(s *httpSession, c *engine.Command) (engine.Result, bool) {
	s.replies.expect()
	res, done := a.hub.Call(c)
	if done {
		s.replies.unexpect()
	}
	return res, done
}
