package loop

import (
	"github.com/panjf2000/gnet/v2"

	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Backpressure. dflockd serves a connection one request at a time and
// blocks on writing each reply, so a client that sends and never reads
// stalls its own connection and nothing else (spec §A.6). gnet instead
// reads and buffers whatever arrives, so without a bound such a client
// grows the server's memory as fast as it can send. The bound: once the
// replies the socket has not taken reach maxUnsent, the connection is
// paused: its socket is no longer read (pause_linux.go), requests already
// read stay unparsed, and nothing more of it runs until its output has
// drained. Then it resumes where it stopped, with every reply in order.
//
// What one connection can hold, whatever its peer does: its unsent output
// (below maxUnsent plus the last reply, or pushCut for pushes, beyond which
// a slow consumer is cut), the input read before the pause (one gnet read,
// 64 KiB, plus an unparsed tail), and one OnTraffic's reply scratch. Where
// reading cannot be paused, a paused connection whose buffered input
// passes maxPausedInput is closed instead.
const (
	// maxUnsent is about 21,000 short replies: far more than a client that
	// reads at all ever leaves unread, since the kernel's socket buffer
	// fills before gnet buffers anything.
	maxUnsent = 64 << 10
	// maxPausedInput is the fallback bound on buffered input.
	maxPausedInput = 1 << 20
	// Drain checks of a paused connection: gnet restores reading by itself
	// once the output is gone, but requests already buffered would wait
	// for the peer's next bytes without a look now and then. The look
	// backs off, as a peer that stays stuck needs it less and less.
	pauseRecheckFirst = 5   // ms
	pauseRecheckMax   = 100 // ms
)

// pause stops serving the connection until its output drains.
func (cs *conn) pause() {
	cs.paused = true
	cs.lp.pauser.pause(cs.c.Fd())
	cs.pauseRecheck = pauseRecheckFirst
	now := cs.srv.clock.Now()
	cs.lp.rt.arm(cs, min(cs.nextPauseCheck(now), cs.deadlineWhilePaused(now)))
}

// resumeIfDrained ends a pause once the socket has taken every byte, and
// reports whether the connection may be served again.
func (cs *conn) resumeIfDrained() bool {
	if cs.c.OutboundBuffered() > 0 {
		return false
	}
	cs.paused = false
	cs.lp.pauser.resume(cs.c.Fd(), false)
	// The per-line read deadline restarts: the connection was not read.
	cs.deadline = cs.srv.clock.Now().After(cs.srv.rtMs)
	cs.lp.rt.arm(cs, cs.deadline)
	return true
}

// pausedTraffic handles input that reaches a paused connection anyway
// (where reading could not be paused): it stays buffered, up to a bound.
func (cs *conn) pausedTraffic() gnet.Action {
	if cs.c.InboundBuffered() > maxPausedInput {
		return gnet.Close
	}
	return gnet.None
}

// nextPauseCheck returns when to look at a paused connection again, and
// backs the interval off.
func (cs *conn) nextPauseCheck(now timerwheel.Instant) timerwheel.Tick {
	at := now.After(cs.pauseRecheck)
	cs.pauseRecheck = min(2*cs.pauseRecheck, pauseRecheckMax)
	return at
}

// deadlineWhilePaused is the read deadline of a paused connection: none
// runs while it is not read, so it is always one read timeout away.
func (cs *conn) deadlineWhilePaused(now timerwheel.Instant) timerwheel.Tick {
	return now.After(cs.srv.rtMs)
}
