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
}

func newGodistlock() *godistlock { return &godistlock{parked: make(map[uint32][]byte)} }

// newTag returns a non-zero tag no parked ON of this session uses.
func (g *godistlock) newTag() uint32 {
	for {
		g.lastTag++
		if _, used := g.parked[g.lastTag]; g.lastTag != 0 && !used {
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
	if !stop {
		g.noteProgress(s, len(buf) > off, lines > 0, now)
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
			cmd.Tag = g.newTag()
		}
		res, _ := s.applyForeign(cmd)
		if res.Blocked {
			g.parked[cmd.Tag] = bytes.Clone(r.Nonce)
			return out, false
		}
		switch res.Status {
		case vocab.StatusOK:
			return parse.AppendGodistlockGive(out, r.Nonce, res.Token.Fence), false
		case vocab.StatusError:
			return parse.AppendGodistlockErr(out, r.Nonce, parse.ErrGodistlockInternal), true
		}
		// Taken (TRY), or --max-locks / --max-waiters reached.
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockRefresh:
		cmd.Kind, cmd.Fence = engine.KindFenceRenew, r.Fence
		if res, _ := s.applyForeign(cmd); res.Status == vocab.StatusOK {
			return parse.AppendGodistlockGive(out, r.Nonce, r.Fence), false
		}
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockOff:
		cmd.Kind = engine.KindOwnRelease
		res, _ := s.applyForeign(cmd)
		if nonce, ok := g.parked[res.Tag]; ok && res.Tag != 0 {
			// A withdrawn wait, or a grant released before its GIVE was
			// written: that ON ends with NO and its delivery is dropped.
			delete(g.parked, res.Tag)
			return parse.AppendGodistlockNo(out, nonce), false
		}
		return out, false
	case parse.GodistlockIs:
		cmd.Kind = engine.KindHolder
		if res, _ := s.applyForeign(cmd); res.Status == vocab.StatusOK {
			return parse.AppendGodistlockLock(out, r.Nonce, res.Token.Fence), false
		}
		return parse.AppendGodistlockNo(out, r.Nonce), false
	case parse.GodistlockStats:
		e := h.Engine()
		held, waiting := e.LockCounts()
		out = parse.AppendGodistlockStat(out, r.Nonce, "connections", int64(h.Connections()))
		out = parse.AppendGodistlockStat(out, r.Nonce, "locks", int64(held))
		out = parse.AppendGodistlockStat(out, r.Nonce, "waiters", int64(waiting))
		out = parse.AppendGodistlockStat(out, r.Nonce, "keys", int64(e.Keys()))
		return parse.AppendGodistlockStatsEnd(out, r.Nonce), false
	}
	panic("session: no handler for godistlock op " + r.Op.String())
}

// deliver writes the late reply of a parked ON: GIVE, or ERR and a close
// when the server drains (or the fence source failed).
func (g *godistlock) deliver(s *Session, r engine.Result) {
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

// applyForeign runs a godistlock command. Its answer is now, or, for an
// ON that waits (Blocked), a delivery matched by its tag (g.parked): the
// codec keeps its own order, since the protocol answers by nonce. The
// log has no vocabulary for these commands, so the listener is not
// served on a cluster member, whose applier refuses them.
func (s *Session) applyForeign(c *engine.Command) (engine.Result, int) {
	r, n, _ := s.hub.app.apply(c, &s.t.Scratch().Fx)
	return r, n
}
