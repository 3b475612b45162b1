package session

import (
	"slices"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/vocab"
)

// A godistlock session on a cluster member hands its commands to the
// replicated log (the member's applier), which owes every answer until
// the entry carrying the command applies. The log applies a connection's
// commands in the order they were made and delivers their answers in
// that order, marked engine.KindAnswer, among the late grants of the
// session's waiting ONs (which carry their tags, unmarked): the session's
// sequencer, s.owed (owed.go), keeps what each answer needs (the nonce,
// and REFRESH's fence), oldest first, as it does for a dflockd session.
// A wait's answer is Blocked: the ON is parked under its tag, as on a
// single node.
//
// Since the protocol answers by nonce, the session goes on parsing while
// answers are owed, up to maxOwed of them; OFF's ordering promise holds
// because a command sent after it applies after it.

// godistlockOwed is a request whose answer is owed or being written. Its
// fields go by size: a cluster member's session may hold maxOwed of them
// (in owedRequest).
type godistlockOwed struct {
	nonce []byte // a copy while owed
	fence uint64 // REFRESH: the fence it renews
	tag   uint32 // ON: its tag
	op    parse.GodistlockOp
}

// owes reports whether an owed ON of session s has tag.
func (g *godistlock) owes(s *Session, tag uint32) bool {
	for i := range s.owed.Len() {
		if s.owed.At(i).g.tag == tag {
			return true
		}
	}
	return false
}

// noteOwed follows a request just owed: held in s.owed, as a dflockd
// session's are (owed.go), a peer's half-close waits for its answer
// (Session.PeerClosed) and the close the session then proposes applies
// behind the requests. A transport that would close at once on the
// peer's EOF is not read meanwhile (Peer.HalfOpen), as there.
func (g *godistlock) noteOwed(s *Session) {
	if !s.readOff && !s.halfOpen {
		s.pauseWhileBlocked()
	}
}

// stopFull stops parsing at maxOwed answers owed, and reading where the
// transport can: the answers' arrival resumes both (deliverOwed).
func (g *godistlock) stopFull(s *Session) {
	if !g.full {
		g.full = true
		g.partial = false
		s.pauseWhileBlocked()
	}
}

// deliverOwed handles r if it is an owed answer, or a demotion's
// error_not_leader (nothing owed will come any more: every owed and
// parked request gets ERR not_leader, and the connection closes, as
// godistlock's clients expect of an ERR), and reports whether it did.
func (g *godistlock) deliverOwed(s *Session, r engine.Result) bool {
	switch {
	case r.Kind == engine.KindGone:
		// The close applied: nothing is owed after it. A peer that
		// half-closed has had every answer (PeerClosed).
		if s.peerGone {
			s.t.Close()
		}
		return true
	case r.Kind == engine.KindAnswer:
		if s.owed.Fill() == nil {
			return true // cannot happen: one answer per command
		}
		o, _ := s.owed.Next()
		sc := s.t.Scratch()
		out, stop := g.answer(s, sc.Out[:0], &o.g, r)
		if len(out) > 0 {
			s.write(out)
		}
		sc.Out = out[:0]
		if stop {
			s.t.Close()
			return true
		}
		wake := g.full
		g.full = false
		if s.owed.Len() == 0 || s.halfOpen {
			s.resumeAfterBlocked() // read again (noteOwed, stopFull)
		}
		if wake {
			s.t.Wake() // parse what waited
		}
		return true
	case r.Status == vocab.StatusErrorNotLeader:
		if s.owed.Len() == 0 && len(g.parked) == 0 {
			return true // owed nothing: its next command learns it
		}
		sc := s.t.Scratch()
		out := sc.Out[:0]
		s.owed.FillAll()
		for o, ok := s.owed.Next(); ok; o, ok = s.owed.Next() {
			out = parse.AppendGodistlockErr(out, o.g.nonce, parse.ErrGodistlockNotLeader)
		}
		tags := make([]uint32, 0, len(g.parked))
		for t := range g.parked {
			tags = append(tags, t)
		}
		slices.Sort(tags)
		for _, t := range tags {
			out = parse.AppendGodistlockErr(out, g.parked[t], parse.ErrGodistlockNotLeader)
		}
		g.parked = map[uint32][]byte{}
		s.write(out)
		sc.Out = out[:0]
		s.t.Close()
		return true
	}
	return false
}
