package session

import "github.com/dflockd-ng/dflockd/vocab"

// The v1 profile (--compat=v1) answers as dflockd v1.10.0 where the wire
// shows it (docs/protocol.md, "Profiles"). What lives in this package:
//   - framing counts CR bytes towards the 256-byte cap (dflockd.go);
//   - only v1.10's commands are known (vocab.Profile.Knows);
//   - a drain keeps serving open sessions, no error_draining (exec);
//   - a parked request does not notice its peer's half-close: v1.10 has
//     no peer-close watcher and reads nothing while a request waits, so
//     `printf 'l\nk\n10\n' | nc -N` still gets its grant. The session
//     stops reading while the request waits (Transport.PauseRead), which
//     keeps the transport from seeing the EOF (and closing) until the
//     reply is written; only then is the close noticed and its cleanup
//     run. No 4 KiB bound on pipelined input applies either: unread, it
//     stays in the socket, as with v1.10's blocked read loop.
//
// The redis-feats line (--compat=rf), forked from v1.10.0, has no
// peer-close watcher either (spec §A.6), and is served the same way while
// a request waits.

// readsWhileBlocked reports whether the profile's reference reads (and
// so notices a half-close) while a request waits: v2's peer-close
// watcher does; v1.10 and the redis-feats line do not.
func readsWhileBlocked(p vocab.Profile) bool {
	return p != vocab.ProfileV1 && p != vocab.ProfileRF
}

// maxBlockedInput is the pipelined input a parked session may buffer.
func (s *Session) maxBlockedInput() int {
	if !readsWhileBlocked(s.hub.cfg.Profile) {
		// Reading stops while parked; only where it cannot does input
		// reach the buffer, bounded as for a paused session. (A cluster
		// session reads on while it waits: pauseIfFlooded.)
		return maxPausedInput
	}
	return maxBlockedInput
}

// pauseWhileBlocked stops reading a v1 or rf session while its request
// waits.
func (s *Session) pauseWhileBlocked() {
	s.readOff = s.t.PauseRead()
}

// resumeAfterBlocked reads again once the wait is over, unless output
// backpressure (backpressure.go) keeps the session paused.
func (s *Session) resumeAfterBlocked() {
	if !s.readOff {
		return
	}
	s.readOff = false
	if !s.paused && !s.paceReadOff {
		s.t.ResumeRead()
	}
}
