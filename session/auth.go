package session

import (
	"bytes"
	"crypto/subtle"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// authCooldown delays the close after a failed auth (spec §B.13).
const authCooldown = 100 * time.Millisecond

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
func (s *Session) authenticate(out []byte, req *vocab.Request, err error, now timerwheel.Instant) []byte {
	isAuth := err == nil && req.Op == vocab.OpAuth
	if at := s.hub.gate.admit(s.authKey, now); at > now {
		s.pendingAuth = &pendingAuth{token: bytes.Clone(req.Token), isAuth: isAuth, at: at}
		s.blocked = true // parse nothing more meanwhile
		s.t.SetTimer(at.After(0))
		return out
	}
	return s.judgeAuth(out, req.Token, isAuth, now)
}

// judgeAuth compares the token (always, so timing does not tell a wrong
// command from a wrong token) and answers.
func (s *Session) judgeAuth(out, token []byte, isAuth bool, now timerwheel.Instant) []byte {
	if s.hub.acl != nil {
		id := s.hub.acl.identify(token, s.hub.cfg.AuthToken)
		if isAuth && id != nil {
			if !s.admit(id) {
				// Over the identity's connection quota: closed, as a
				// server at its connection limit closes a new one, and
				// at once: a tenant that redials in a loop then costs
				// the loop no timer, no wake of the timer driver and no
				// second turn per refusal (issue #35's noisy tenant).
				s.closing = true
				s.t.Close()
				return out
			}
			s.authed = true
			return parse.AppendStatus(out, vocab.StatusOK)
		}
		s.hub.gate.failed(s.authKey, now)
		return s.refuseAuth(out, now)
	}
	match := subtle.ConstantTimeCompare(token, []byte(s.hub.cfg.AuthToken)) == 1
	if isAuth && match {
		s.authed = true
		return parse.AppendStatus(out, vocab.StatusOK)
	}
	s.hub.gate.failed(s.authKey, now)
	return s.refuseAuth(out, now)
}

// refuseAuth answers error_auth and closes after the cool-down: what every
// failed first request gets (spec §A.5, §B.13), a wrong token, another
// command, a line too long or a read timeout.
func (s *Session) refuseAuth(out []byte, now timerwheel.Instant) []byte {
	s.countReply(vocab.StatusErrorAuth)
	s.hub.cfg.Events.Warn("auth failed", "remote", s.remote())
	s.closing = true
	s.deadline = now.After(authCooldown.Milliseconds())
	s.t.SetTimer(s.deadline)
	return parse.AppendStatus(out, vocab.StatusErrorAuth)
}

// judgePendingAuth runs when a held auth's turn may have come; it reports
// whether the session's timer needs nothing more from Timer.
func (s *Session) judgePendingAuth(now timerwheel.Instant) bool {
	p := s.pendingAuth
	if now < p.at {
		s.t.SetTimer(p.at.After(0))
		return true
	}
	s.pendingAuth = nil
	s.blocked = false
	sc := s.t.Scratch()
	out := s.judgeAuth(sc.Out[:0], p.token, p.isAuth, now)
	s.write(out)
	sc.Out = out[:0]
	if s.authed {
		s.deadline = now.After(s.hub.rtMs)
		s.t.SetTimer(s.deadline)
		if s.leftover {
			s.t.Wake() // serve what was pipelined behind the auth
		}
	}
	return true
}
