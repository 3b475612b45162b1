package session

import (
	"bytes"
	"errors"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// This codec serves the godistlock client protocol (parse/godistlock.go),
// on the same engine as dflockd's: the locks are dflockd's lock namespace,
// so both protocols share one FIFO per key and one fence counter.
//
// Differences from a dflockd session, and why:
//   - Requests carry nonces, so replies need not come in request order: an
//     ON that has to wait is parked in the engine under a tag and the
//     session goes on answering what follows it. The GIVE comes later as
//     any late result does.
//   - OFF gets no reply, as with godistlock's own server, so a client
//     written for that server never sees an answer it did not expect.
//     Replies on one session are written in order, so anything sent after
//     OFF is answered after the release took effect. If the OFF ends an ON
//     of this session that is still waiting (or was granted and its GIVE
//     not yet sent), that ON is answered "NO <its nonce>".
//   - REFRESH answers "GIVE <nonce> <fence>" (still yours, same fence, the
//     lease restarted) or "NO <nonce>" (this session does not hold the
//     lock under that fence any more): the two words a client already
//     reads.
//   - An idle session has no read deadline: godistlock clients keep one
//     connection and may sit silent while holding or waiting for locks.
//     Only a line that has started must end within --read-timeout.
//   - Malformed input and protocol failures answer "ERR <nonce> <reason>"
//     and close; the nonce is "-" when it cannot be known.
//   - On a cluster member the commands go through the replicated log
//     like dflockd's (cluster.OpForeign): every answer is owed until its
//     entry applies (godistlock_owed.go); a member that does not lead
//     answers "ERR <nonce> not_leader" and closes, as does a leader that
//     stops leading for what it still owed. HELLO and STATS are answered
//     at once from the member itself.

// maxGodistlockPending bounds the parked ONs of one session: each keeps a
// copy of its nonce, and nothing else bounds how many a client pipelines.
const maxGodistlockPending = 4096

// godistlock is a session's godistlock protocol state.
type godistlock struct {
	// parked maps the tag of each waiting ON to a copy of its nonce.
	parked  map[uint32][]byte
	lastTag uint32
	// partial: a line has started and not ended; only then does the read
	// deadline apply.
	partial bool
	// full: on a cluster member, parsing stopped at maxOwed answers owed
	// (the session's s.owed, godistlock_owed.go).
	full bool
}

func newGodistlock() *godistlock { return &godistlock{parked: make(map[uint32][]byte)} }

// newTag returns a non-zero tag no parked or owed ON of session s uses.
func (g *godistlock) newTag(s *Session) uint32 {
	for {
		g.lastTag++
		if _, used := g.parked[g.lastTag]; g.lastTag != 0 && !used && !g.owes(s, g.lastTag) {
			return g.lastTag
		}
	}
}

func (g *godistlock) idleDeadline(*Session) bool { return g.partial }

func (g *godistlock) timeoutReply(dst []byte) []byte {
	return parse.AppendGodistlockErr(dst, nil, parse.ErrGodistlockDeadline)
}

// input runs every complete line; replies go out with one write.
func (g *godistlock) input(s *Session, buf, out []byte, now timerwheel.Instant) (int, []byte, bool, bool) {
	off, lines := 0, 0
	more, over, stop := false, false, false
	unsent := s.t.Unsent()
	for !stop {
		if s.owed.Len() >= maxOwed {
			g.stopFull(s) // godistlock_owed.go
			break
		}
		if len(out) >= replyBudget {
			more = true
			break
		}
		if unsent+len(out) >= maxUnsent {
			over = true // backpressure.go
			break
		}
		req, n, err := parse.NextGodistlock(buf[off:])
		if errors.Is(err, parse.ErrIncomplete) {
			break
		}
		if err == nil && s.usage != nil && s.overRate(now, buf[off:], 1) {
			break // the line stays unread until the identity's rate allows it
		}
		off += n
		lines++
		if err != nil {
			// A malformed line or one over the cap: ERR and close.
			out = parse.AppendGodistlockErr(out, req.Nonce, err)
			stop = true
			break
		}
		out, stop = g.exec(s, out, &req, now)
	}
	if g.full && len(buf)-off > maxPausedInput {
		// Input piles up where reading cannot be paused.
		return off, parse.AppendGodistlockErr(out, nil, parse.ErrGodistlockPending), false, true
	}
	if !stop {
		// While full, unparsed lines are not the peer's to hurry.
		g.noteProgress(s, len(buf) > off && !g.full, lines > 0, now)
	}
	if over && !stop {
		s.pauseAfter(out)
		return off, out, false, false
	}
	return off, out, more, stop
}

// noteProgress starts the read deadline when a line begins (or another one
// follows a completed line) and stops it when no partial line is left.
func (g *godistlock) noteProgress(s *Session, partial, completed bool, now timerwheel.Instant) {
	if partial && (!g.partial || completed) {
		s.deadline = now.After(s.hub.rtMs)
	}
	g.partial = partial
}

// exec runs one request and appends its reply, if it has one yet. stop
// asks for a close after writing.
func (g *godistlock) exec(s *Session, out []byte, r *parse.GodistlockRequest, now timerwheel.Instant) (_ []byte, stop bool) {
	h := s.hub
	if h.draining.Load() {
		return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockDraining), true
	}
	if s.ident != nil && !s.ident.Everything() {
		// A policy: the request is checked as the line protocol's
		// counterpart; a refusal is NO, as for a lock not granted.
		if op, ok := godistlockAsLine[r.Op]; ok && s.refused(&vocab.Request{Op: op, Key: r.Lock}) {
			s.countReply(vocab.StatusErrorDenied)
			return parse.AppendGodistlockNo(out, r.Nonce), false
		}
	}
	sc := s.t.Scratch()
	sc.Cmd = engine.Command{Session: s.id, At: now, Req: vocab.Request{Key: r.Lock}, LeaseMs: r.LeaseMs}
	cmd := &sc.Cmd
	s.ownArgs(&cmd.Req)
	switch r.Op {
	case parse.GodistlockHello:
		return parse.AppendGodistlockHello(out, r.Nonce, h.cfg.GodistlockID, h.cfg.Version), false
	case parse.GodistlockOn, parse.GodistlockTry:
		cmd.Kind, cmd.Wait = engine.KindTaggedAcquire, r.Op == parse.GodistlockOn
		if cmd.Wait {
			if len(g.parked) >= maxGodistlockPending {
				return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockPending), true
			}
			cmd.Tag = g.newTag(s)
		}
	case parse.GodistlockRefresh:
		cmd.Kind, cmd.Fence = engine.KindFenceRenew, r.Fence
	case parse.GodistlockOff:
		cmd.Kind = engine.KindOwnRelease
	case parse.GodistlockIs:
		cmd.Kind = engine.KindHolder
	case parse.GodistlockStats:
		return g.appendStats(s, out, r.Nonce, now), false
	default:
		panic("session: no handler for godistlock op " + r.Op.String())
	}
	req := godistlockOwed{op: r.Op, nonce: r.Nonce, tag: cmd.Tag, fence: r.Fence}
	res := &sc.Res
	_, done := h.app.apply(cmd, &sc.Fx, res)
	if !done && !res.Blocked {
		// A cluster member: the answer comes when the log entry applies
		// (godistlock_owed.go).
		req.nonce = bytes.Clone(r.Nonce)
		s.owed.Reserve(owedRequest{g: req})
		g.noteOwed(s)
		return out, false
	}
	return g.answer(s, out, &req, *res)
}

// answer appends the reply of request q given its result: a Blocked ON
// is parked under its tag until its grant is delivered.
func (g *godistlock) answer(s *Session, out []byte, q *godistlockOwed, res engine.Result) (_ []byte, stop bool) {
	if res.Status == vocab.StatusErrorNotLeader {
		// A cluster member that does not lead: godistlock's ERR says
		// "you will be disconnected, maybe try another server", which is
		// what its clients do (docs/protocol.md, "godistlock clients").
		return parse.AppendGodistlockErr(out, q.nonce, parse.ErrGodistlockNotLeader), true
	}
	switch q.op {
	case parse.GodistlockOn, parse.GodistlockTry:
		if res.Blocked {
			g.parked[q.tag] = bytes.Clone(q.nonce)
			return out, false
		}
		switch res.Status {
		case vocab.StatusOK:
			return parse.AppendGodistlockGive(out, q.nonce, res.Token.Fence), false
		case vocab.StatusError:
			return parse.AppendGodistlockErr(out, q.nonce, parse.ErrGodistlockInternal), true
		}
		// Taken (TRY), or --max-locks / --max-waiters reached.
		return parse.AppendGodistlockNo(out, q.nonce), false
	case parse.GodistlockRefresh:
		if res.Status == vocab.StatusOK {
			return parse.AppendGodistlockGive(out, q.nonce, q.fence), false
		}
		return parse.AppendGodistlockNo(out, q.nonce), false
	case parse.GodistlockOff:
		if nonce, ok := g.parked[res.Tag]; ok && res.Tag != 0 {
			// A withdrawn wait, or a grant released before its GIVE was
			// written: that ON ends with NO and its delivery is dropped.
			delete(g.parked, res.Tag)
			return parse.AppendGodistlockNo(out, nonce), false
		}
		return out, false
	case parse.GodistlockIs:
		if res.Status == vocab.StatusOK {
			return parse.AppendGodistlockLock(out, q.nonce, res.Token.Fence), false
		}
		return parse.AppendGodistlockNo(out, q.nonce), false
	}
	panic("session: no answer for godistlock op " + q.op.String())
}

// appendStats answers STATS from the engine's state here (a member's
// replica: before the cluster's first entry, an empty one). A policy
// identity that may not observe every key gets the counts of what it may
// observe, as its line-protocol stats shows it only those keys.
func (g *godistlock) appendStats(s *Session, out, nonce []byte, now timerwheel.Instant) []byte {
	h := s.hub
	conns, held, waiting, keys := h.Connections(), 0, 0, 0
	if s.ident != nil && !s.ident.Everything() {
		conns, held, waiting, keys = scopedCounts(scopeStats(h.app.stats(true, now, conns), s.current(), s.usage))
	} else if e := h.Engine(); e != nil {
		held, waiting = e.LockCounts()
		keys = e.Keys()
	}
	out = parse.AppendGodistlockStat(out, nonce, "connections", int64(conns))
	out = parse.AppendGodistlockStat(out, nonce, "locks", int64(held))
	out = parse.AppendGodistlockStat(out, nonce, "waiters", int64(waiting))
	out = parse.AppendGodistlockStat(out, nonce, "keys", int64(keys))
	return parse.AppendGodistlockStatsEnd(out, nonce)
}

// deliver writes the late reply of a parked ON: GIVE, or ERR and a close
// when the server drains (or the fence source failed).
func (g *godistlock) deliver(s *Session, r engine.Result) {
	if g.deliverOwed(s, r) { // godistlock_owed.go
		return
	}
	nonce, ok := g.parked[r.Tag]
	if !ok {
		return // settled by OFF meanwhile
	}
	delete(g.parked, r.Tag)
	sc := s.t.Scratch()
	if r.Status == vocab.StatusOK {
		out := parse.AppendGodistlockGive(sc.Out[:0], nonce, r.Token.Fence)
		s.write(out)
		sc.Out = out[:0]
		return
	}
	reason := parse.ErrGodistlockInternal
	if s.hub.draining.Load() {
		reason = parse.ErrGodistlockDraining
	}
	s.write(parse.AppendGodistlockErr(sc.Out[:0], nonce, reason))
	s.t.Close()
}

// godistlockAsLine is the line-protocol command a policy checks each
// godistlock request as (HELLO is not checked).
var godistlockAsLine = map[parse.GodistlockOp]vocab.Op{
	parse.GodistlockOn: vocab.OpLock, parse.GodistlockTry: vocab.OpLock,
	parse.GodistlockRefresh: vocab.OpRenew, parse.GodistlockOff: vocab.OpRelease,
	parse.GodistlockIs: vocab.OpGet, parse.GodistlockStats: vocab.OpStats,
}

// scopedCounts is STATS's figures from a scoped stats document: the
// engine's (LockCounts, Keys) counted over the keys it lists.
func scopedCounts(st *vocab.Stats) (conns, held, waiting, keys int) {
	for _, l := range st.Locks {
		if l.OwnerConnID != 0 {
			held++
		}
		waiting += l.Waiters
	}
	for _, rw := range st.RWLocks {
		if rw.Readers > 0 || rw.Writer {
			held++
		}
		waiting += rw.Waiters
	}
	keys = len(st.Locks) + len(st.Semaphores) + len(st.RWLocks) + len(st.IdleLocks) + len(st.IdleSemaphores)
	return st.Connections, held, waiting, keys
}
