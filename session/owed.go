package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Answers owed. A session hands each request to the hub's applier and
// gets its answer now, or is owed it; owed answers come back through the
// transport's Post in the order of the requests, and s.owed, the one
// sequencer of owed answers (internal/owed), keeps a place for each, in
// that order, with what its answer needs when it comes (owedRequest).
// A frame the session would answer itself (ping, stats, a refusal) must
// not overtake them: it is parsed again once they are written (retry).
// How far a session parses ahead of what it is owed is the applier's
// (applier.pipelined): not at all on a single node, where a request that
// waits holds back the rest as dflockd's connection reader does (spec
// §A.6); up to maxOwed on a cluster member, whose log keeps each
// connection's requests in order.

// applyRequest runs a request for exec into *r: its answer now (done),
// or one more owed, after which parsing stops where the applier says.
func (s *Session) applyRequest(cmd *engine.Command, r *engine.Result) (done bool) {
	sc := s.t.Scratch()
	receivers, done := s.hub.app.apply(cmd, &sc.Fx, r)
	if !done {
		s.owed.Reserve(owedRequest{at: cmd.At, op: cmd.Req.Op})
		switch {
		case !s.hub.app.pipelined():
			s.blocked = true
			if !readsWhileBlocked(s.hub.cfg.Profile) {
				s.pauseWhileBlocked()
			}
		case s.owed.Len() >= maxOwed:
			s.blocked = true
		}
		if s.hub.app.pipelined() && !s.readOff && !s.halfOpen {
			// A peer's EOF would close the connection before the
			// answers owed are written: read nothing more until they
			// are (PeerClosed reports a half-close meanwhile).
			s.pauseWhileBlocked()
		}
		return false
	}
	if s.owed.Len() > 0 {
		// Answered here (error_not_leader: the member stopped leading),
		// it would overtake what is owed: it runs again after that.
		s.retry = true
		return false
	}
	if r.Kind == engine.KindReceivers {
		r.Kind, r.Int = engine.KindInt, int64(receivers)
	}
	return true
}

// answeredHere reports whether exec answers a parsed frame itself rather
// than through the applier: only requests that go to the applier may be
// parsed while answers are owed, since theirs come back in order after
// them.
func (s *Session) answeredHere(req *vocab.Request, err error) bool {
	if err != nil || !s.authed || (s.hub.draining.Load() && s.hub.cfg.Profile != vocab.ProfileV1) {
		return true
	}
	switch req.Op {
	case vocab.OpPing, vocab.OpAuth, vocab.OpStats, vocab.OpStableRef:
		// stable-ref marks the session before it is applied: it must not
		// be parsed twice (a retry).
		return true
	}
	return false
}

// floodedWhileOwed decides about input that piles up unparsed while
// answers are owed, and reports whether the connection must close. A
// single node's session waits on one request and follows dflockd: a
// connection whose read buffer fills behind a waiting request is closed
// (spec §A.6, maxBlockedInput). A pipelining session is owed answers for
// requests still in flight, not waiting ones: it stops reading once
// maxPausedInput is unparsed, and flow control holds the peer back.
func (s *Session) floodedWhileOwed(unparsed int) bool {
	if !s.hub.app.pipelined() {
		return unparsed >= s.maxBlockedInput()
	}
	if unparsed >= maxPausedInput && !s.readOff {
		s.pauseWhileBlocked()
	}
	return false
}

// owedRequest is what the answer of an owed request needs when it comes:
// for the line protocol, when it arrived and its command (its latency,
// latency.go); for godistlock, its nonce and what it asked
// (godistlock_owed.go). One type for both codecs, so that a session has
// one sequencer whichever it speaks.
type owedRequest struct {
	g  godistlockOwed
	at timerwheel.Instant
	op vocab.Op
}

// deliverOwed writes the oldest owed answer, or, for a demotion's
// error_not_leader, answers everything owed with it (nothing before it
// will come any more); parsing resumes once nothing is owed.
//
// r is encoded by a direct call: handed to an encoder through a func
// value it escaped, which cost every delivered answer (each answer of a
// cluster member, each grant of a waiter) a 144-byte allocation.
func (s *Session) deliverOwed(r *engine.Result, rf bool) {
	if r.Kind == engine.KindGone {
		if s.peerGone {
			s.t.Close() // after what is queued
		}
		return
	}
	if s.owed.Open() == 0 {
		return // a demotion notice for a session owed nothing
	}
	if r.Status == vocab.StatusErrorNotLeader {
		s.owed.FillAll() // the engine never answers that: a demotion
	} else {
		s.owed.Fill()
	}
	s.flushPushes()
	sc := s.t.Scratch()
	out := sc.Out[:0]
	var now timerwheel.Instant
	if sc.Counters != nil {
		now = s.hub.clock.Now() // before the write, as Input does
	}
	for q, ok := s.owed.Next(); ok; q, ok = s.owed.Next() {
		s.countReply(r.Status)
		out = appendResult(out, r, rf)
		s.observeOwed(sc.Counters, &q, now)
	}
	s.write(out)
	sc.Out = out[:0]
	switch {
	case s.owed.Len() == 0 && s.peerGone:
		s.t.Close() // all answered (a demotion); nobody reads on
	case s.owed.Len() == 0 && s.blocked:
		s.unblock(s.hub.clock.Now())
	case s.owed.Len() == 0:
		s.resumeAfterBlocked() // if it stopped reading (applyRequest)
	}
}

// PeerClosed is called by a transport that read the end of its peer's
// input (EOF, or the socket failed): it reports whether the transport
// must keep the connection open for writing instead of closing it. A
// pipelining session owed answers does: it closes its session at once,
// behind its requests, so that they are answered first (a client that
// half-closes after its requests, nc -N, gets its replies) while a wait
// among them is withdrawn by the close, as a single node withdraws the
// wait of a client that went away. The close's answer (KindGone) ends
// it, as does a demotion, which answers everything. A single node's
// session owes only the answer of a request that waits, which the close
// withdraws: the transport closes at once.
func (s *Session) PeerClosed() bool {
	if !s.hub.app.pipelined() || s.owed.Len() == 0 || s.closed || s.peerGone {
		return false
	}
	s.peerGone = true
	s.hub.app.close(s.id, s.hub.clock.Now(), &s.t.Scratch().Fx)
	return true
}

// Owed is the number of answers the session is owed. On its transport's
// goroutine.
func (s *Session) Owed() int { return s.owed.Len() }

// HoldInput is called by a transport that reads on while answers are owed
// (Peer.HalfOpen) but, reading its peer's EOF, keeps only what it has not yet
// handed to its own output buffer (loop's afterlife): while output waits
// there, reading stops until nothing is owed (deliverOwed resumes it),
// and a half-close meanwhile comes through PeerClosed, as for any paused
// transport.
func (s *Session) HoldInput() {
	if s.owed.Len() > 0 && !s.readOff && !s.closed && !s.peerGone {
		s.pauseWhileBlocked()
	}
}
