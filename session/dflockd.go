package session

import (
	"bytes"
	"errors"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// maxBlockedInput: dflockd closes a blocked connection once its 4 KiB read
// buffer fills with pipelined bytes (spec §A.6).
const maxBlockedInput = 4096

// dflockdCodec is dflockd's line protocol: 3-line requests, 1-line
// replies, in the hub's profile.
type dflockdCodec struct{}

func (dflockdCodec) idleDeadline(*Session) bool { return true }

func (dflockdCodec) timeoutReply(dst []byte) []byte {
	return parse.AppendStatus(dst, vocab.StatusError)
}

func (dflockdCodec) input(s *Session, buf, out []byte, now timerwheel.Instant) (int, []byte, bool, bool) {
	switch {
	case s.closing:
		return len(buf), out, false, false
	case s.discarding:
		n, out, stop := s.drainLongLine(buf, out, now)
		return n, out, false, stop
	case s.blocked:
		return 0, out, false, s.floodedWhileOwed(len(buf))
	}
	frame := parse.Next
	if s.hub.cfg.Profile == vocab.ProfileV1 {
		frame = parse.NextCountingCR
	}
	off, frames := 0, 0
	more, over, stop := false, false, false
	unsent := s.t.Unsent()
	for !s.blocked && !s.closing {
		if len(out) >= replyBudget || s.t.Yield() {
			more = true
			break
		}
		if unsent+len(out) >= maxUnsent {
			over = true // backpressure: serve no more until the peer reads
			break
		}
		f, n, err := frame(buf[off:])
		if err != nil {
			if errors.Is(err, parse.ErrLineTooLong) {
				off += n
				s.discarding = true
			}
			break
		}
		if s.usage != nil && s.overRate(now, buf[off:], 3) {
			break // the frame stays unread until the identity's rate allows it
		}
		off += n
		frames++
		mark := len(out)
		out, stop = s.exec(out, f, now)
		if s.noting {
			if len(out) == mark { // owed, a pending auth, a retry
				s.t.Scratch().answered.unnote(s.noted)
			}
			s.noting = false
		}
		if s.retry {
			// Answered here, it would overtake the replies still to
			// come from the log: it runs again once they are written.
			s.retry = false
			off -= n
			frames--
			break
		}
		if stop {
			break
		}
	}
	if s.owed.Len() > 0 && !s.blocked {
		// Parsing stopped at a frame that waits for what is owed
		// (retry): nothing more is parsed until that has come.
		s.blocked = true
	}
	if !s.discarding && !s.blocked && !s.closing && !stop {
		s.noteProgress(buf[off:], frames, now)
	}
	if s.discarding && !stop {
		n, o, st := s.drainLongLine(buf[off:], out, now)
		return off + n, o, false, st
	}
	if s.blocked && s.floodedWhileOwed(len(buf)-off) {
		// What arrived behind the waiting request already fills
		// dflockd's read buffer (spec §A.6).
		return off, out, false, true
	}
	if over && !stop {
		s.pauseAfter(out)
		return off, out, false, false
	}
	return off, out, more, stop
}

// drainLongLine discards input through the LF that ends an over-long
// line, then answers error and closes (an unauthenticated session: a
// failed auth).
func (s *Session) drainLongLine(buf, out []byte, now timerwheel.Instant) (int, []byte, bool) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return len(buf), out, false
	}
	s.discarding = false
	if !s.authed {
		// A first request too long to be an auth (over 64 KiB) is a
		// failed auth like any other.
		return i + 1, s.refuseAuth(out, now), false
	}
	s.countReply(vocab.StatusError)
	s.hub.cfg.Events.Info("protocol error: line too long; closing", "remote", s.remote())
	return i + 1, parse.AppendStatus(out, vocab.StatusError), true
}

// exec runs one frame and appends its reply (if any yet). stop asks for a
// close once the replies are sent.
func (s *Session) exec(out []byte, f parse.Frame, now timerwheel.Instant) ([]byte, bool) {
	profile := s.hub.cfg.Profile
	if profile == vocab.ProfileRF {
		f = s.stripCRs(f)
	}
	// The request is parsed straight into the command the applier runs,
	// in the scratch: no Request or Result is copied on the way.
	sc := s.t.Scratch()
	sc.Cmd = engine.Command{Kind: engine.KindRequest, Session: s.id, At: now}
	req := &sc.Cmd.Req
	err := parse.ParseInto(f, req)
	if !profile.Knows(req.Op) {
		err = parse.ErrUnknownCommand // e.g. ping under v1 and rf
		req.Op = vocab.OpUnknown
	}
	if s.owed.Len() > 0 && s.answeredHere(req, err) {
		s.retry = true
		return out, false
	}
	s.countRequest(req.Op)
	if !s.authed {
		return s.authenticate(out, req, err, now), false
	}
	if s.hub.draining.Load() && profile != vocab.ProfileV1 {
		// v1.10 goes on serving a draining server's connections; its
		// waits end with error in the engine (spec §D.5).
		s.countReply(vocab.StatusErrorDraining)
		return parse.AppendStatus(out, vocab.StatusErrorDraining), true
	}
	if err != nil {
		s.countReply(vocab.StatusError)
		s.hub.cfg.Events.Info("protocol error", "remote", s.remote(),
			"command", printable(f.Cmd), "error", err.Error())
		return parse.AppendStatus(out, vocab.StatusError), false
	}
	if s.ident != nil && !s.ident.Everything() && s.refused(req) {
		return s.deny(out), false
	}
	switch req.Op {
	case vocab.OpPing:
		return parse.AppendStatus(out, vocab.StatusOK), false
	case vocab.OpAuth:
		if s.byCert {
			return s.authOnCertificate(out, req.Token, now), false
		}
		// Already authenticated, or no token configured (spec §B.13).
		s.countReply(vocab.StatusError)
		return parse.AppendStatus(out, vocab.StatusError), false
	case vocab.OpStableRef:
		// The identity under which this connection's claims outlive it
		// (--orphan-ttl): a cluster's replicated state keeps it.
		if s.stableRef {
			s.countReply(vocab.StatusError)
			return parse.AppendStatus(out, vocab.StatusError), false
		}
		s.stableRef = true
		if s.ident != nil {
			req.Token = IdentityRef(s.ident.Name, req.Token)
		}
	case vocab.OpStats:
		return s.appendStats(out, now), false
	}
	// Everything else, barrier included (a single node is caught up; a
	// cluster's no-op through the log answers once every write committed
	// before it has applied here, a linearizable read point, spec §G),
	// goes to the applier.
	s.ownArgs(req)
	r := &sc.Res
	if !s.applyRequest(&sc.Cmd, r) {
		return out, false
	}
	s.countReply(r.Status)
	return appendResult(out, r, profile == vocab.ProfileRF), false
}

// ownArgs copies a request's byte arguments out of the read buffer into
// the transport's argument scratch, so that the command does not alias
// bytes the transport will reuse: a command is a self-contained value.
func (s *Session) ownArgs(r *vocab.Request) {
	sc := s.t.Scratch()
	a := sc.Args[:0]
	own := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		start := len(a)
		a = append(a, b...)
		return a[start:len(a):len(a)]
	}
	r.Key, r.Token, r.Value, r.Old = own(r.Key), own(r.Token), own(r.Value), own(r.Old)
	sc.Args = a
}

// appendStats appends the stats reply.
func (s *Session) appendStats(out []byte, now timerwheel.Instant) []byte {
	// rf: every array; v1 and v2: the five keys.
	st := s.hub.app.stats(s.hub.cfg.Profile == vocab.ProfileRF, now, s.hub.Connections())
	if s.ident != nil && !s.ident.Everything() {
		st = scopeStats(st, s.current(), s.usage)
	}
	return parse.AppendStatsReply(out, st, s.hub.cfg.Profile)
}

// stripCRs removes CRs inside the lines of an rf frame, as dflockd's
// redis-feats reader does (spec §A.2). Frames without one, nearly all, are
// returned as they are; the others are copied into the session's scratch,
// which lives until the next frame.
func (s *Session) stripCRs(f parse.Frame) parse.Frame {
	if bytes.IndexByte(f.Cmd, '\r') < 0 && bytes.IndexByte(f.Key, '\r') < 0 && bytes.IndexByte(f.Arg, '\r') < 0 {
		return f
	}
	b := s.crless[:0]
	var ends [3]int
	for i, line := range [3][]byte{f.Cmd, f.Key, f.Arg} {
		for _, c := range line {
			if c != '\r' {
				b = append(b, c)
			}
		}
		ends[i] = len(b)
	}
	s.crless = b
	return parse.Frame{Cmd: b[:ends[0]], Key: b[ends[0]:ends[1]], Arg: b[ends[1]:ends[2]]}
}

// deliver writes an owed answer and resumes parsing whatever was
// pipelined behind it once nothing more is owed.
func (dflockdCodec) deliver(s *Session, r engine.Result) {
	s.deliverOwed(&r, s.hub.cfg.Profile == vocab.ProfileRF)
}

// appendResult encodes an engine result as its reply line; rf adds the
// fence to grants and renewals (spec §B.0).
func appendResult(out []byte, r *engine.Result, rf bool) []byte {
	switch r.Kind {
	case engine.KindGrant:
		var tok [32]byte
		return parse.AppendGrant(out, r.Status, r.Token.Append(tok[:0]), r.Lease, r.Token.Fence, rf)
	case engine.KindRenew:
		return parse.AppendRenew(out, r.Lease, r.Token.Fence, rf)
	case engine.KindInt:
		return parse.AppendOKInt(out, r.Int)
	case engine.KindValue:
		return parse.AppendOKText(out, r.Value)
	case engine.KindList:
		return parse.AppendOKList(out, r.Items)
	}
	if r.Status == vocab.StatusErrorNotLeader {
		return parse.AppendNotLeader(out, r.Value)
	}
	return parse.AppendStatus(out, r.Status)
}

// printable is what a log line shows of a client's bytes: at most 32,
// anything but printable ASCII as '?', so that a client cannot forge log
// lines or fill them.
func printable(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}
