package loop

import "github.com/dflockd-ng/dflockd/parse"

// The v1 profile (--compat=v1) answers as dflockd v1.10.0 where the wire
// shows it (README "Profiles"). What lives in this package:
//   - framing counts CR bytes towards the 256-byte cap (Server.frame);
//   - only v1.10's commands are known (parse.Profile.Knows);
//   - a drain keeps serving open connections, no error_draining (exec);
//   - a blocked request does not notice its peer's half-close: v1.10 has
//     no peer-close watcher and reads nothing while a request waits, so
//     `printf 'l\nk\n10\n' | nc -N` still gets its grant. The loop stops
//     reading the socket while the request waits (pause_linux.go), which
//     keeps gnet from seeing the EOF (and closing) until the reply is
//     written; only then is the close noticed and its cleanup run. No
//     4 KiB bound on pipelined input applies either: unread, it stays in
//     the socket, as with v1.10's blocked read loop.

// maxBlockedInput is the pipelined input a blocked connection may buffer.
func (s *Server) maxBlockedInput() int {
	if s.cfg.Profile == parse.ProfileV1 {
		// Reading stops while blocked; only where it cannot does input
		// reach the buffer, bounded as for a paused connection.
		return maxPausedInput
	}
	return maxBlockedInput
}

// pauseWhileBlocked stops reading a v1 connection while its request waits.
func (cs *conn) pauseWhileBlocked() {
	cs.readOff = cs.lp.pauser.pause(cs.c.Fd())
}

// resumeAfterBlocked reads again once the wait is over, unless output
// backpressure (backpressure.go) keeps the connection paused.
func (cs *conn) resumeAfterBlocked() {
	if !cs.readOff {
		return
	}
	cs.readOff = false
	if !cs.paused {
		cs.lp.pauser.resume(cs.c.Fd(), cs.c.OutboundBuffered() > 0)
	}
}
