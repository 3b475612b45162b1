package session

import (
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Backpressure. dflockd serves a connection one request at a time and
// blocks on writing each reply, so a client that sends and never reads
// stalls its own connection and nothing else (spec §A.6). A transport
// that reads whatever arrives would instead buffer such a client's
// requests and replies as fast as it can send them. The bound: once the
// replies the socket has not taken reach maxUnsent, the session is
// paused: the transport stops reading (Transport.PauseRead), requests
// already read stay unparsed, and nothing more of it runs until its
// output has drained. Then it resumes where it stopped, with every reply
// in order.
//
// What one session can hold, whatever its peer does: its unsent output
// (below maxUnsent plus the last reply, or pushCut for pushes, beyond
// which a slow consumer is cut), the input read before the pause (one
// transport read, 64 KiB on gnet, plus an unparsed tail), and one Input's
// reply scratch. Where reading cannot be paused, a paused session whose
// buffered input passes maxPausedInput is closed instead.
const (
	// maxUnsent is about 21,000 short replies: far more than a client that
	// reads at all ever leaves unread, since the kernel's socket buffer
	// fills before the transport buffers anything.
	maxUnsent = 64 << 10
	// maxPausedInput is the fallback bound on buffered input.
	maxPausedInput = 1 << 20
	// Drain checks of a paused session: a transport may restore reading by
	// itself once the output is gone, but requests already buffered would
	// wait for the peer's next bytes without a look now and then. The look
	// backs off, as a peer that stays stuck needs it less and less.
	pauseRecheckFirst = 5   // ms
	pauseRecheckMax   = 100 // ms
)

// pauseAfter stops serving the session until its output, out included,
// drains: out is what the caller is about to write.
func (s *Session) pauseAfter([]byte) {
	s.paused = true
	s.t.PauseRead()
	s.pauseRecheck = pauseRecheckFirst
	now := s.hub.clock.Now()
	s.t.SetTimer(min(s.nextPauseCheck(now), s.deadlineWhilePaused(now)))
}

// resumeIfDrained ends a pause once the socket has taken every byte, and
// reports whether the session may be served again.
func (s *Session) resumeIfDrained() bool {
	if s.t.Unsent() > 0 {
		return false
	}
	s.paused = false
	if !s.readOff && !s.paceReadOff {
		s.t.ResumeRead()
	}
	// The per-line read deadline restarts: the session was not read.
	s.deadline = s.hub.clock.Now().After(s.hub.rtMs)
	s.t.SetTimer(s.deadline)
	return true
}

// pausedInput handles input that reaches a paused session anyway (where
// reading could not be paused): it stays buffered, up to a bound.
func (s *Session) pausedInput(buffered int) (close bool) {
	return buffered > maxPausedInput
}

// nextPauseCheck returns when to look at a paused session again, and
// backs the interval off.
func (s *Session) nextPauseCheck(now timerwheel.Instant) timerwheel.Tick {
	at := now.After(s.pauseRecheck)
	s.pauseRecheck = min(2*s.pauseRecheck, pauseRecheckMax)
	return at
}

// deadlineWhilePaused is the read deadline of a paused session: none runs
// while it is not read, so it is always one read timeout away.
func (s *Session) deadlineWhilePaused(now timerwheel.Instant) timerwheel.Tick {
	return now.After(s.hub.rtMs)
}
