package loop

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"net/netip"

	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// replyBudget bounds the replies one OnTraffic produces for a connection,
// so a client pipelining thousands of expensive requests (stats) cannot
// hold its loop, and the reply scratch stays small.
const replyBudget = 64 << 10

// conn is one client connection; every field is confined to its loop.
type conn struct {
	c    gnet.Conn
	lp   *loopState
	srv  *Server
	sess *engine.Session
	// gd is the godistlock protocol state (godistlock.go); nil for a
	// connection on the dflockd listener.
	gd *gdState

	authed bool
	// blocked: a request is parked in the engine; input is left unparsed
	// until its one delivery arrives.
	blocked bool
	// discarding: an over-long line is being drained up to its LF, after
	// which the connection answers error and closes (spec §A.5 code 12).
	discarding bool
	// closing: the connection only waits to be closed (auth cool-down).
	closing bool
	// authKey is the address block whose failed auths slow this one down
	// (authgate.go); pendingAuth an auth waiting for its turn to be judged.
	authKey     netip.Prefix
	pendingAuth *pendingAuth
	closed      bool
	stableRef   bool

	// crless holds rf frames whose lines had interior CRs removed.
	crless []byte

	// deadline is when the connection must have completed its next line;
	// partialLines is how many lines of an unfinished frame had arrived.
	deadline     timerwheel.Tick
	partialLines int
	// writeDeadline is set while replies sit unsent because the peer does
	// not read: past it the connection is closed (--write-timeout, spec
	// §D.3). Zero when the outbound buffer is empty or the limit is off.
	// Any progress of the peer's reading restarts it, as dflockd's
	// per-write deadline does: written counts every byte handed to the
	// socket, flushedMark what had left by the deadline's start.
	writeDeadline timerwheel.Tick
	written       int64
	flushedMark   int64
	// paused: the output passed maxUnsent, so the connection is neither
	// read nor served until it drains (backpressure.go).
	paused       bool
	readOff      bool  // v1: reading stopped while a request waits (v1.go)
	pauseRecheck int64 // ms between drain checks while paused
	timer        timerwheel.Node
	// backlog tracks unread pushes for queue-group member choice (backlog.go).
	backlog pushBacklog
}

// onTraffic parses and executes every complete frame in the inbound
// buffer, writes all replies with one Write, and leaves a partial frame
// (or everything behind a parked request) buffered.
func (cs *conn) onTraffic() gnet.Action {
	if cs.paused && !cs.resumeIfDrained() {
		return cs.pausedTraffic()
	}
	if cs.gd != nil {
		return cs.gdTraffic()
	}
	c := cs.c
	switch {
	case cs.closing:
		_, _ = c.Discard(-1)
		return gnet.None
	case cs.discarding:
		return cs.drainLongLine()
	case cs.blocked:
		if c.InboundBuffered() >= cs.srv.maxBlockedInput() {
			return gnet.Close
		}
		return gnet.None
	}
	buf, _ := c.Peek(-1)
	out := cs.lp.out[:0]
	off, frames := 0, 0
	action := gnet.None
	more, over := false, false
	unsent := c.OutboundBuffered()
	for !cs.blocked && !cs.closing {
		if len(out) >= replyBudget || cs.lp.pushBytes.Load() >= pushBudget {
			more = true
			break
		}
		if unsent+len(out) >= maxUnsent {
			over = true // backpressure: serve no more until the peer reads
			break
		}
		f, n, err := cs.srv.frame(buf[off:])
		if err != nil {
			if errors.Is(err, parse.ErrLineTooLong) {
				off += n
				cs.discarding = true
			}
			break
		}
		off += n
		frames++
		var stop bool
		out, stop = cs.exec(out, f)
		if stop {
			action = gnet.Close
			break
		}
	}
	if !cs.discarding && !cs.blocked && !cs.closing && action == gnet.None {
		cs.noteProgress(buf[off:], frames)
	}
	if off > 0 {
		// gnet's Discard treats n <= 0 as "everything".
		_, _ = c.Discard(off)
	}
	if len(out) > 0 {
		cs.write(out)
	}
	cs.lp.out = out[:0]
	if cs.discarding && action == gnet.None {
		return cs.drainLongLine()
	}
	if cs.blocked && c.InboundBuffered() >= cs.srv.maxBlockedInput() {
		// What arrived behind the parked request already fills
		// dflockd's read buffer (spec §A.6).
		return gnet.Close
	}
	if over && action == gnet.None {
		cs.pause()
		return gnet.None
	}
	if more && action == gnet.None {
		// Let the loop serve other connections, then continue here.
		_ = c.Wake(nil)
	}
	return action
}

// noteProgress moves the read deadline when a frame completed or a new
// line of a partial frame arrived: the deadline is per line (spec §A.4).
func (cs *conn) noteProgress(partial []byte, frames int) {
	lines := 0
	if len(partial) > 0 {
		lines = parse.CompleteLines(partial)
	}
	if frames > 0 || lines != cs.partialLines {
		cs.deadline = cs.srv.clock.Now().After(cs.srv.rtMs)
	}
	cs.partialLines = lines
}

// drainLongLine discards input through the LF that ends an over-long
// line, then answers error and closes.
func (cs *conn) drainLongLine() gnet.Action {
	c := cs.c
	buf, _ := c.Peek(-1)
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		if len(buf) > 0 {
			_, _ = c.Discard(len(buf))
		}
		return gnet.None
	}
	_, _ = c.Discard(i + 1)
	cs.discarding = false
	if !cs.authed {
		// A first request too long to be an auth (over 64 KiB) is a
		// failed auth like any other.
		cs.write(cs.refuseAuth(cs.lp.out[:0], cs.srv.clock.Now()))
		return gnet.None
	}
	_, _ = c.Write(parse.AppendStatus(cs.lp.out[:0], parse.StatusError))
	return gnet.Close
}

// exec runs one frame and appends its reply (if any yet). stop asks the
// caller to close the connection after writing.
func (cs *conn) exec(out []byte, f parse.Frame) ([]byte, bool) {
	profile := cs.srv.cfg.Profile
	if profile == parse.ProfileRF {
		f = cs.stripCRs(f)
	}
	req, err := parse.Parse(f)
	if !profile.Knows(req.Op) {
		err = parse.ErrUnknownCommand // e.g. ping under v1 and rf
	}
	if !cs.authed {
		return cs.authenticate(out, &req, err), false
	}
	if cs.srv.draining.Load() && profile != parse.ProfileV1 {
		// v1.10 goes on serving a draining server's connections; its
		// waits end with error in the engine (spec §D.5).
		return parse.AppendStatus(out, parse.StatusErrorDraining), true
	}
	if err != nil {
		return parse.AppendStatus(out, parse.StatusError), false
	}
	switch req.Op {
	case parse.OpPing, parse.OpBarrier:
		return parse.AppendStatus(out, parse.StatusOK), false
	case parse.OpAuth:
		// Already authenticated, or no token configured (spec §B.13).
		return parse.AppendStatus(out, parse.StatusError), false
	case parse.OpStableRef:
		if cs.stableRef {
			return parse.AppendStatus(out, parse.StatusError), false
		}
		cs.stableRef = true
		return parse.AppendStatus(out, parse.StatusOK), false
	case parse.OpStats:
		out = append(out, "ok "...)
		out = cs.srv.eng.AppendStats(out, cs.srv.Connections())
		return append(out, '\n'), false
	}
	r := cs.srv.eng.Do(cs.sess, &req)
	if r.Blocked {
		cs.blocked = true
		if profile == parse.ProfileV1 {
			cs.pauseWhileBlocked()
		}
		return out, false
	}
	return appendResult(out, r, profile == parse.ProfileRF), false
}

// stripCRs removes CRs inside the lines of an rf frame, as dflockd's
// redis-feats reader does (spec §A.2). Frames without one, nearly all, are
// returned as they are; the others are copied into the connection's
// scratch, which lives until the next frame.
func (cs *conn) stripCRs(f parse.Frame) parse.Frame {
	if bytes.IndexByte(f.Cmd, '\r') < 0 && bytes.IndexByte(f.Key, '\r') < 0 && bytes.IndexByte(f.Arg, '\r') < 0 {
		return f
	}
	b := cs.crless[:0]
	var ends [3]int
	for i, line := range [3][]byte{f.Cmd, f.Key, f.Arg} {
		for _, c := range line {
			if c != '\r' {
				b = append(b, c)
			}
		}
		ends[i] = len(b)
	}
	cs.crless = b
	return parse.Frame{Cmd: b[:ends[0]], Key: b[ends[0]:ends[1]], Arg: b[ends[1]:ends[2]]}
}

// pendingAuth is a first request held until its address's turn comes
// (authgate.go), with what judging it needs.
type pendingAuth struct {
	token  []byte // a copy: the frame's bytes die with the read
	isAuth bool   // an auth request that parsed
	at     timerwheel.Instant
}

// authenticate handles the first request when a token is configured:
// anything but the right auth gets error_auth and, after a cool-down that
// slows guessing, a close. If the client's address failed an auth less
// than a cool-down ago, the request is held, unjudged, until its turn.
func (cs *conn) authenticate(out []byte, req *parse.Request, err error) []byte {
	now := cs.srv.clock.Now()
	isAuth := err == nil && req.Op == parse.OpAuth
	if at := cs.srv.gate.admit(cs.authKey, now); at > now {
		cs.pendingAuth = &pendingAuth{token: bytes.Clone(req.Token), isAuth: isAuth, at: at}
		cs.blocked = true // parse nothing more meanwhile
		cs.lp.rt.arm(cs, at.After(0))
		return out
	}
	return cs.judgeAuth(out, req.Token, isAuth, now)
}

// judgeAuth compares the token (always, so timing does not tell a wrong
// command from a wrong token) and answers.
func (cs *conn) judgeAuth(out, token []byte, isAuth bool, now timerwheel.Instant) []byte {
	match := subtle.ConstantTimeCompare(token, []byte(cs.srv.cfg.AuthToken)) == 1
	if isAuth && match {
		cs.authed = true
		return parse.AppendStatus(out, parse.StatusOK)
	}
	cs.srv.gate.failed(cs.authKey, now)
	return cs.refuseAuth(out, now)
}

// refuseAuth answers error_auth and closes after the cool-down: what every
// failed first request gets (spec §A.5, §B.13), a wrong token, another
// command, a line too long or a read timeout.
func (cs *conn) refuseAuth(out []byte, now timerwheel.Instant) []byte {
	cs.closing = true
	cs.deadline = now.After(authCooldown.Milliseconds())
	cs.lp.rt.arm(cs, cs.deadline)
	return parse.AppendStatus(out, parse.StatusErrorAuth)
}

// judgePendingAuth runs when a held auth's turn may have come; it reports
// whether the connection's timer needs nothing more from checkDeadline.
func (cs *conn) judgePendingAuth(now timerwheel.Instant) bool {
	p := cs.pendingAuth
	if now < p.at {
		cs.lp.rt.arm(cs, p.at.After(0))
		return true
	}
	cs.pendingAuth = nil
	cs.blocked = false
	out := cs.judgeAuth(cs.lp.out[:0], p.token, p.isAuth, now)
	cs.write(out)
	cs.lp.out = out[:0]
	if cs.authed {
		cs.deadline = now.After(cs.srv.rtMs)
		cs.lp.rt.arm(cs, cs.deadline)
		if cs.c.InboundBuffered() > 0 {
			_ = cs.c.Wake(nil) // serve what was pipelined behind the auth
		}
	}
	return true
}

// appendResult encodes an engine result as its reply line; rf adds the
// fence to grants and renewals (spec §B.0).
func appendResult(out []byte, r engine.Result, rf bool) []byte {
	switch r.Kind {
	case engine.KindGrant:
		var tok [32]byte
		return parse.AppendGrant(out, r.Status, r.Token.Append(tok[:0]), r.Lease, r.Token.Fence, rf)
	case engine.KindRenew:
		return parse.AppendRenew(out, r.Lease, r.Token.Fence, rf)
	case engine.KindInt:
		return parse.AppendOKInt(out, r.Int)
	case engine.KindValue:
		out = append(out, "ok "...)
		out = append(out, r.Value...)
		return append(out, '\n')
	}
	return parse.AppendStatus(out, r.Status)
}

// deliver writes the late reply of a parked request, after any pushes
// batched before it, and resumes parsing whatever was pipelined behind
// it; a push only joins the connection's batch (backlog.go).
func (cs *conn) deliver(r engine.Result) {
	if cs.gd != nil {
		cs.gdDeliver(r)
		return
	}
	if cs.closed {
		return
	}
	if r.Kind == engine.KindPush {
		cs.push(r.Value) // answers no request: nothing to unblock
		return
	}
	cs.flushPushes()
	out := appendResult(cs.lp.out[:0], r, cs.srv.cfg.Profile == parse.ProfileRF)
	cs.write(out)
	cs.lp.out = out[:0]
	cs.blocked = false
	cs.resumeAfterBlocked()
	cs.deadline = cs.srv.clock.Now().After(cs.srv.rtMs)
	if cs.c.InboundBuffered() > 0 {
		// gnet calls OnTraffic again only for new bytes; Wake makes it
		// parse the pipelined tail now.
		_ = cs.c.Wake(nil)
	}
}

// write sends replies. gnet writes at once and keeps what the socket does
// not take; when that happens the write deadline starts.
func (cs *conn) write(b []byte) {
	_, _ = cs.c.Write(b)
	cs.written += int64(len(b))
	cs.noteUnsent()
	if cs.writeDeadline == 0 && cs.srv.wtMs > 0 {
		if unsent := cs.c.OutboundBuffered(); unsent > 0 {
			cs.writeDeadline = cs.srv.clock.Now().After(cs.srv.wtMs)
			cs.flushedMark = cs.written - int64(unsent)
			cs.lp.rt.arm(cs, min(cs.writeDeadline, cs.deadline))
		}
	}
}

// checkDeadline runs when the connection's timer fired: close it if a
// deadline really passed, or re-arm for the earliest one it has now.
func (cs *conn) checkDeadline() {
	if cs.closed {
		return
	}
	now := cs.srv.clock.Now()
	if cs.writeDeadline != 0 {
		unsent := int64(cs.c.OutboundBuffered())
		switch flushed := cs.written - unsent; {
		case unsent == 0:
			cs.writeDeadline = 0
		case flushed > cs.flushedMark:
			// The peer reads, if slowly: a new deadline for the rest.
			cs.writeDeadline = now.After(cs.srv.wtMs)
			cs.flushedMark = flushed
		case now.Passed(cs.writeDeadline):
			_ = cs.c.Close()
			return
		}
	}
	if cs.pendingAuth != nil && cs.judgePendingAuth(now) {
		return
	}
	if cs.paused && cs.resumeIfDrained() {
		// Serve what waited in the input; OnTraffic re-arms the timer.
		_ = cs.c.Wake(nil)
	}
	next := cs.deadline
	switch {
	case cs.paused:
		// Like a parked request, a paused connection is not reading:
		// the per-line deadline starts again when it resumes.
		next = min(cs.deadlineWhilePaused(now), cs.nextPauseCheck(now))
	case cs.closing:
		if now.Passed(cs.deadline) {
			_ = cs.c.Close()
			return
		}
	case cs.blocked:
		// A parked request is not reading: the per-line deadline starts
		// again when it returns.
		next = now.After(cs.srv.rtMs)
	case cs.gd != nil && !cs.gd.partial:
		// An idle godistlock connection has no read deadline (godistlock.go).
		next = now.After(cs.srv.rtMs)
	case now.Passed(cs.deadline) && !cs.authed && cs.gd == nil:
		// A timeout before the auth is a failed auth (spec §B.13).
		cs.write(cs.refuseAuth(cs.lp.out[:0], now))
		return
	case now.Passed(cs.deadline):
		cs.write(cs.timeoutReply(cs.lp.out[:0]))
		_ = cs.c.Close()
		return
	}
	if cs.writeDeadline != 0 {
		next = min(next, cs.writeDeadline)
	}
	cs.lp.rt.arm(cs, cs.recheckBacklog(now, next))
}
