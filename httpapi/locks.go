package httpapi

import (
	"context"
	"net/http"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// ending says how a lock call ended.
type ending uint8

const (
	answered    ending = iota // the engine answered; the answer is the reply
	clientGone                // the client went away first: 408
	sessionGone               // the session closed first: 410
)

// lockCall serves the lock and semaphore routes: op is the protocol
// request the route makes. Checks come in dflockd's order: key, session,
// body; then a drain refuses the call.
func (a *API) lockCall(w http.ResponseWriter, r *http.Request, op vocab.Op) {
	key := r.PathValue("key")
	if msg := checkKey(key); msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	s := a.requestSession(w, r)
	if s == nil {
		return
	}
	defer func() { a.sessions.done(s, a.clock.Now()) }()
	req, msg := readRequest(w, r, op)
	if msg != "" {
		writeError(w, http.StatusBadRequest, codeBadRequest, msg)
		return
	}
	req.Key = []byte(key)
	if a.draining() {
		writeError(w, http.StatusServiceUnavailable, codeDraining, "")
		return
	}
	res, end := a.call(r.Context(), s, &req)
	switch end {
	case clientGone:
		// Nobody reads this; it is written for the access log and the
		// metrics, which count the call as the client's cancel.
		writeError(w, http.StatusRequestTimeout, codeClientCanceled, "the client went away before the answer")
	case sessionGone:
		writeError(w, http.StatusGone, codeSessionGone, "")
	default:
		a.reply(w, op, &res)
	}
}

// call runs req for s, in s's turn, and waits for its answer if it parks.
// It returns what the engine answered and how the call ended; a call that
// did not end as answered has withdrawn, or released, whatever the engine
// gave it.
func (a *API) call(ctx context.Context, s *httpSession, req *vocab.Request) (engine.Result, ending) {
	select {
	case s.turn <- struct{}{}:
	case <-s.gone:
		return engine.Result{}, sessionGone
	case <-ctx.Done():
		return engine.Result{}, clientGone
	}
	defer func() { <-s.turn }()
	if s.closing() {
		// The close raced this call to the turn: its engine session may
		// be closed by now.
		return engine.Result{}, sessionGone
	}
	if a.draining() {
		// A drain began while this call waited for its turn: refused,
		// as a request read after the drain began is on TCP.
		return engine.Result{Status: vocab.StatusErrorDraining}, answered
	}
	res, done := a.start(s, &engine.Command{Kind: engine.KindRequest, Session: s.conn, Req: *req})
	if !done {
		var end ending
		if res, end = s.replies.next(ctx, s.gone); end != answered {
			return a.withdraw(s, req, end)
		}
	}
	switch {
	case res.Status == vocab.StatusErrorNotLeader:
		return res, answered // a cluster member that does not lead, or was deposed
	case s.closing():
		// Answered, but the session is closing (DELETE, expiry,
		// Shutdown): its locks are released as it closes, so a grant
		// is no grant. Give it back now, and say the session is gone.
		a.abandon(s, req, &res)
		return res, sessionGone
	case ctx.Err() != nil:
		// Answered, but the client left meanwhile: nobody will see a
		// token this answer carries.
		a.abandon(s, req, &res)
		return res, clientGone
	}
	return res, answered
}

// withdraw ends s's request for a caller that stopped waiting: it asks
// for the request's withdrawal (a KindCancel: answered at once on a single
// node, through the log on a member) and takes what comes. If the request
// was answered first, its answer is taken and what it granted given back
// (abandon), since nobody will see its token.
func (a *API) withdraw(s *httpSession, req *vocab.Request, end ending) (engine.Result, ending) {
	q := s.replies
	c, done := a.start(s, &engine.Command{Kind: engine.KindCancel, Session: s.conn})
	if !done {
		c = q.wait()
	}
	switch {
	case c.Status == vocab.StatusErrorNotLeader && !done:
		// A demotion voided everything owed: nothing more comes.
	case c.Kind == engine.KindInt && c.Int == 1:
		// Withdrawn: its answer will never come.
		q.forgive()
	case c.Kind == engine.KindInt || done:
		// Nothing waited (Int 0: the answer is on its way), or this
		// member stopped leading before the withdrawal (the answer, or
		// the demotion's notice, is on its way).
		res := q.wait()
		a.abandon(s, req, &res)
		return res, end
	default:
		// Through the log, the request's answer came before the
		// withdrawal's, which follows. (Int 0 cannot come first: the
		// log answers the request before the withdrawal behind it.)
		q.wait()
		a.abandon(s, req, &c)
	}
	return c, end
}

// abandon undoes what an answer nobody will read gave a session: a grant is
// released; a two-phase enqueue that queued is ended with a zero-timeout
// wait (and released if the slot came through meanwhile), so it does not
// hold up the queue until the session closes.
func (a *API) abandon(s *httpSession, req *vocab.Request, res *engine.Result) {
	switch {
	case res.Kind == engine.KindGrant && (res.Status == vocab.StatusOK || res.Status == vocab.StatusAcquired):
		a.release(s, req, res)
	case res.Status == vocab.StatusQueued:
		w := vocab.Request{Op: vocab.OpWait, Key: req.Key}
		if req.Op.Semaphore() {
			w.Op = vocab.OpSemWait
		}
		if got := a.do(s, &w); got.Kind == engine.KindGrant && got.Status == vocab.StatusOK {
			a.release(s, req, &got)
		}
	}
}

// release gives back the grant res of a request like req.
func (a *API) release(s *httpSession, req *vocab.Request, res *engine.Result) {
	rel := vocab.Request{Op: vocab.OpRelease, Key: req.Key, Token: res.Token.Append(nil)}
	if req.Op.Semaphore() {
		rel.Op = vocab.OpSemRelease
	}
	if got := a.do(s, &rel); got.Status != vocab.StatusOK {
		// Its lease ends it anyway (in a cluster, or the next leader's
		// promotion, which ends this member's connections, keeps it
		// until then); say so, it should not happen.
		a.cfg.Logf("httpapi: releasing an unseen grant of %q: %s", req.Key, got.Status)
	}
}

// reply writes the answer to a call of op that the engine answered.
func (a *API) reply(w http.ResponseWriter, op vocab.Op, res *engine.Result) {
	switch res.Status {
	case vocab.StatusErrorNotLeader:
		a.writeNotLeader(w) // a cluster member deposed while the call waited
		return
	case vocab.StatusOK:
		switch op {
		case vocab.OpRelease, vocab.OpSemRelease:
			w.WriteHeader(http.StatusNoContent)
			return
		case vocab.OpRenew, vocab.OpSemRenew:
			writeJSON(w, http.StatusOK, renewReply{RemainingS: res.Lease})
			return
		}
		if res.Kind == engine.KindGrant {
			writeJSON(w, http.StatusOK, grantReply{Status: res.Status.String(), Token: string(res.Token.Append(nil)), LeaseTTLS: res.Lease})
			return
		}
	case vocab.StatusAcquired: // the JSON's status is the line protocol's word
		writeJSON(w, http.StatusOK, grantReply{Status: res.Status.String(), Token: string(res.Token.Append(nil)), LeaseTTLS: res.Lease})
		return
	case vocab.StatusQueued, vocab.StatusTimeout:
		writeJSON(w, http.StatusOK, grantReply{Status: res.Status.String()})
		return
	}
	status, code := a.errorFor(op, res.Status)
	if status == http.StatusInternalServerError {
		a.cfg.Logf("httpapi: %s answered %s (kind %d), which the HTTP API does not map", op, res.Status, res.Kind)
	}
	writeError(w, status, code, "")
}
