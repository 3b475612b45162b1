package session

import (
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/owed"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// replyBudget bounds the replies one Input produces, so a client
// pipelining thousands of expensive requests (stats) cannot hold its
// transport's goroutine, and the reply scratch stays small.
const replyBudget = 64 << 10

// Session is one client's protocol state over a Transport. Its fields are
// confined to the transport's goroutine, except the backlog counters.
type Session struct {
	hub   *Hub
	t     Transport
	id    engine.SessionID
	codec codec
	// peerAddr and halfOpen are the Peer the session opened with.
	peerAddr net.Addr
	halfOpen bool

	authed bool
	// blocked: input is left unparsed until what is owed arrives (a
	// request that waits, a pipeline at maxOwed) or an auth's turn comes.
	blocked bool
	// discarding: an over-long line is being drained up to its LF, after
	// which the session answers and closes (spec §A.5 code 12).
	discarding bool
	// closing: the session only waits to be closed (auth cool-down).
	closing   bool
	closed    bool
	stableRef bool
	// leftover: input remained unparsed at the end of the last Input.
	leftover bool

	// crless holds rf frames whose lines had interior CRs removed.
	crless []byte

	// deadline is when the session must have completed its next line;
	// partialLines is how many lines of an unfinished frame had arrived.
	deadline     timerwheel.Tick
	partialLines int
	// writeDeadline is set while replies sit unsent because the peer does
	// not read: past it the connection is closed (--write-timeout, spec
	// §D.3). Zero when the output is empty or the limit is off. Any
	// progress of the peer's reading restarts it, as dflockd's per-write
	// deadline does: written counts every byte handed to the transport,
	// flushedMark what had left by the deadline's start.
	writeDeadline timerwheel.Tick
	written       int64
	flushedMark   int64
	// paused: the output passed maxUnsent, so the session is neither read
	// nor served until it drains (backpressure.go).
	paused       bool
	pauseRecheck int64 // ms between drain checks while paused
	readOff      bool  // v1: reading stopped while a request waits (v1.go)
	// owed holds a place for each answer the applier owes this session,
	// in request order (owed.go); retry is set by exec for a frame that
	// must wait for them.
	owed  owed.Queue[owedRequest]
	retry bool
	// peerGone: the peer's input ended while answers were owed; the
	// session waits for them, then closes (PeerClosed).
	peerGone bool
	// backlog tracks unread pushes (pushes.go).
	backlog pushBacklog

	// authKey is the address block whose failed auths slow this one down
	// (auth.go); pendingAuth an auth waiting for its turn to be judged.
	authKey     netip.Prefix
	pendingAuth *pendingAuth

	// noted is the command of the request exec is running, noted as
	// answered in this read while noting (latency.go).
	noted  vocab.Op
	noting bool

	// With a policy (acl.go): the connection's identity, the policy it
	// was looked up in, and its identity's usage; ident nil = no policy.
	// who is ident for other goroutines (the observatory). paced: the
	// identity is over its rate, and reading waits until paceUntil;
	// paceTurns: the next requests that have their turns from the rate
	// (taken when paced); paceReadOff: pacing paused reading, not
	// resumed yet.
	ident       *policy.Identity
	identPol    *policy.Policy
	resume      *policy.Resume // where its last check's walk branched (nil: every permission)
	byCert      bool           // ident came from the client's certificate
	usage       *Usage
	who         atomic.Pointer[policy.Identity]
	paced       bool
	paceTurns   int
	paceReadOff bool
	paceUntil   timerwheel.Tick
}

// codec is a wire protocol of a Session.
type codec interface {
	// input parses and runs the complete requests at the start of buf,
	// appending replies to out, and returns the bytes it consumed. It
	// stops early for a parked request, backpressure or the reply
	// budget (more: call again). stop asks for a close once out is sent.
	input(s *Session, buf, out []byte, now timerwheel.Instant) (n int, outNew []byte, more, stop bool)
	// deliver answers a parked request with its late result.
	deliver(s *Session, r engine.Result)
	// timeoutReply appends what a session gets when its read deadline
	// passes.
	timeoutReply(dst []byte) []byte
	// idleDeadline reports whether a session with no partial line is
	// under the read deadline.
	idleDeadline(s *Session) bool
}

// ID returns the session's engine id.
func (s *Session) ID() engine.SessionID { return s.id }

// Input is called by the transport with the bytes it has buffered; the
// session consumes complete requests from the start of buf and returns
// how many bytes it used. buf is only read during the call. close asks
// the transport to close the connection (after sending the replies).
func (s *Session) Input(buf []byte) (consumed int, close bool) {
	if s.closed {
		return len(buf), false
	}
	if s.paused && !s.resumeIfDrained() {
		return 0, s.pausedInput(len(buf))
	}
	if s.paced {
		return 0, s.pausedInput(len(buf))
	}
	sc := s.t.Scratch()
	now := s.hub.clock.Now() // one reading for the whole read batch
	n, out, more, stop := s.codec.input(s, buf, sc.Out[:0], now)
	if s.paceReadOff && !s.paced {
		s.endPacedRead() // what waited for its turn is served
	}
	if len(sc.answered.ops) > 0 && sc.Counters != nil {
		// Before the write: a client that has read its reply finds
		// the request in /metrics.
		s.observeAnswered(sc, now)
	}
	if len(out) > 0 {
		s.write(out)
	}
	sc.Out = out[:0]
	s.leftover = n < len(buf)
	if stop {
		return n, true
	}
	if more && !s.paused {
		s.t.Wake() // let the transport serve others, then continue here
	}
	return n, false
}

// write sends bytes. What the socket does not take starts the write
// deadline.
func (s *Session) write(b []byte) {
	s.t.Write(b)
	s.written += int64(len(b))
	s.sent()
}

// Flushed is called by a transport that held output written while it
// delivered a batch of results (Transport.Write) and has now handed it to
// the socket: what the socket did not take is then seen as for a write
// (the write deadline, the backlog figure).
func (s *Session) Flushed() {
	if s.closed {
		return
	}
	s.sent()
	if s.t.Unsent() > 0 && s.backlog.recheckMs == 0 {
		// As flushPushes does for a push batch the socket did not take.
		s.backlog.recheckMs = recheckFirst
		s.t.SetTimer(s.hub.clock.Now().After(recheckFirst)) // Timer re-arms what comes later
	}
}

// sent notes output just handed to the transport: what the socket has not
// taken starts the write deadline.
func (s *Session) sent() {
	s.noteUnsent()
	if s.paceReadOff && s.t.Unsent() > 0 {
		s.paceReadOff = false // the transport reads again once it drains (overRate)
	}
	if s.writeDeadline == 0 && s.hub.wtMs > 0 {
		if unsent := s.t.Unsent(); unsent > 0 {
			s.writeDeadline = s.hub.clock.Now().After(s.hub.wtMs)
			s.flushedMark = s.written - int64(unsent)
			s.t.SetTimer(min(s.writeDeadline, s.deadline))
		}
	}
}

// Deliver is called by the transport, on the session's goroutine, for
// each result Post queued: the late reply of a parked request, written
// after the pushes batched before it, or a push, which joins the batch
// (the transport then calls FlushPushes). It reports whether a push was
// batched.
func (s *Session) Deliver(r engine.Result) (batched bool) {
	if s.closed {
		if r.Kind == engine.KindPush {
			s.backlog.queued.Add(-int64(pushLen(&r.Push)))
		}
		return false
	}
	if r.Kind == engine.KindPush {
		return s.push(&r.Push)
	}
	s.codec.deliver(s, r)
	return false
}

// unblock ends a parked request: the read deadline restarts, and input
// pipelined behind it is served.
func (s *Session) unblock(now timerwheel.Instant) {
	s.blocked = false
	s.resumeAfterBlocked()
	s.deadline = now.After(s.hub.rtMs)
	if s.leftover {
		// The transport calls Input again only for new bytes; Wake makes
		// it serve the pipelined tail now.
		s.t.Wake()
	}
}

// Closed is called by the transport once the connection is closed: the
// engine runs the session's disconnect cleanup (spec §D.4).
func (s *Session) Closed() {
	if s.closed {
		return
	}
	s.closed = true
	sc := s.t.Scratch()
	sc.Fx.Reset()
	if !s.peerGone { // else closed already (PeerClosed)
		s.hub.app.close(s.id, s.hub.clock.Now(), &sc.Fx)
	}
	s.releaseIdentity()
	s.hub.forget(s)
	s.hub.Route(&sc.Fx)
	sc.Fx.Reset()
}

// Timer is called by the transport at or after the time SetTimer asked:
// close the connection if a deadline really passed, or ask again for the
// earliest one the session has now.
func (s *Session) Timer() {
	if s.closed {
		return
	}
	now := s.hub.clock.Now()
	if s.writeDeadline != 0 {
		unsent := int64(s.t.Unsent())
		switch flushed := s.written - unsent; {
		case unsent == 0:
			s.writeDeadline = 0
		case flushed > s.flushedMark:
			// The peer reads, if slowly: a new deadline for the rest.
			s.writeDeadline = now.After(s.hub.wtMs)
			s.flushedMark = flushed
		case now.Passed(s.writeDeadline):
			s.hub.cfg.Events.Info("write timeout: the client does not read; closing", "remote", s.remote(),
				"unsent_bytes", unsent)
			s.t.Close()
			return
		}
	}
	if s.pendingAuth != nil && s.judgePendingAuth(now) {
		return
	}
	if s.paused && s.resumeIfDrained() {
		s.t.Wake() // serve what waited in the input
	}
	if s.paced && s.endPace(now) {
		s.t.Wake()
	}
	next := s.deadline
	switch {
	case s.paced:
		next = s.paceUntil
	case s.paused:
		// Like a parked request, a paused session is not reading: the
		// per-line deadline starts again when it resumes.
		next = min(s.deadlineWhilePaused(now), s.nextPauseCheck(now))
	case s.closing:
		if now.Passed(s.deadline) {
			s.t.Close()
			return
		}
	case s.blocked:
		// A parked request is not reading: the per-line deadline starts
		// again when it returns.
		next = now.After(s.hub.rtMs)
	case !s.codec.idleDeadline(s):
		next = now.After(s.hub.rtMs)
	case now.Passed(s.deadline) && !s.authed:
		// A timeout before the auth is a failed auth (spec §B.13).
		s.write(s.refuseAuth(s.t.Scratch().Out[:0], now))
		return
	case now.Passed(s.deadline):
		s.write(s.codec.timeoutReply(s.t.Scratch().Out[:0]))
		s.t.Close()
		return
	}
	if s.writeDeadline != 0 {
		next = min(next, s.writeDeadline)
	}
	s.t.SetTimer(s.recheckBacklog(now, next))
}

// noteProgress moves the read deadline when a frame completed or a new
// line of a partial frame arrived: the deadline is per line (spec §A.4).
func (s *Session) noteProgress(partial []byte, frames int, now timerwheel.Instant) {
	lines := 0
	if len(partial) > 0 {
		lines = parse.CompleteLines(partial)
	}
	if frames > 0 || lines != s.partialLines {
		s.deadline = now.After(s.hub.rtMs)
	}
	s.partialLines = lines
}
