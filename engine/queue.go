package engine

import (
	"fmt"
	"slices"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Per-session order. A dflockd connection runs its requests one after the
// other: one that waits (a lock wait, a blocking pop, a barrier wait)
// holds back the rest, which run, in order, when it ends. A single node
// gets that by reading nothing more of the connection meanwhile (spec
// §A.6), so the engine never sees a request behind a wait there. A
// cluster member pipelines a connection's requests into its log; the
// engine keeps those that arrive behind a wait in the session's queue
// (encoded, so that they outlive the caller's buffers and go into
// snapshots as they are) and runs them, in the same Apply as the wait's
// end (its late reply, a cancel), on every replica alike. Each answer
// goes out as a late reply (an Effect to the session), after the one
// that ended the wait and before the effects it caused (Effect.Caused);
// one that waits in turn holds back the rest again. A close drops them.

// queued reports whether a request of s must queue behind its wait: it
// has requests queued already, or its last request waits still.
func (e *Engine) queued(s *session, fx *Effects) bool {
	return len(s.queue) > 0 || (s.waits && e.stillWaits(s, fx))
}

// stillWaits reports whether s's last request still waits, and forgets
// that it did once it does not. Only a dflockd request's wait counts
// (untagged): a foreign session's tagged acquires wait side by side.
func (e *Engine) stillWaits(s *session, fx *Effects) bool {
	if e.findWait(s, 0, false, 0, fx) {
		return true
	}
	s.waits = false
	return false
}

// resumeQueues runs the queues of the sessions whose waits the effects
// from fx.List[start:] ended (a late reply, not a push), in the order of
// those replies; the effects of what runs are appended, and looked at in
// turn. Where no session has a queue (a single node) it only looks.
func (e *Engine) resumeQueues(now timerwheel.Instant, fx *Effects, start int) {
	for i := start; i < len(fx.List); i++ {
		f := &fx.List[i]
		if f.Group != nil || f.Result.Kind == KindPush {
			continue
		}
		if s := e.sessions.get(f.To); s != nil && len(s.queue) > 0 {
			e.runQueue(s, now, fx)
		}
	}
}

// runQueue runs s's queued requests, unless its request still waits,
// until one waits in turn.
func (e *Engine) runQueue(s *session, now timerwheel.Instant, fx *Effects) {
	if len(s.queue) == 0 || e.stillWaits(s, fx) {
		return
	}
	q := s.queue
	s.queue = nil
	for len(q) > 0 {
		c := Command{Kind: KindRequest, Session: s.id, At: now}
		n, err := readQueued(q, &c)
		if err != nil {
			// Only the engine writes a queue: damage is a bug, and
			// going on would make this replica diverge.
			panic(fmt.Sprintf("engine: queue of session %#x: %v", uint64(s.id), err))
		}
		q = q[n:]
		mark := len(fx.List)
		var r Result
		e.request(&c, fx, &r)
		if r.Blocked {
			s.waits = true
			if len(q) > 0 {
				s.queue = q // c's slices pointed into q's earlier bytes only
			}
			return
		}
		fx.List = slices.Insert(fx.List, mark, Effect{To: s.id, Result: r, Caused: len(fx.List) - mark})
	}
}

// appendQueued encodes request c for s's queue: a flags byte (1:
// Readopt), then the request in vocab's encoding, the Plain form the
// queue has always had (snapshots hold it).
func appendQueued(dst []byte, c *Command) []byte {
	flags := byte(0)
	if c.Readopt {
		flags = 1
	}
	return vocab.AppendRequest(append(dst, flags), &c.Req, vocab.Plain)
}

// readQueued decodes the request at the start of q into c (its Readopt
// and Req; the slices point into q) and returns the bytes it took.
func readQueued(q []byte, c *Command) (int, error) {
	if len(q) < 1 || q[0] > 1 {
		return 0, fmt.Errorf("bad request header")
	}
	n, err := vocab.ReadRequest(q[1:], &c.Req, vocab.Plain)
	if err != nil {
		return 0, err
	}
	c.Readopt = q[0] == 1
	return 1 + n, nil
}

// Queued returns how many requests session id has queued behind its
// wait (0 for a session that is not open). Like Digest, call it when the
// engine is quiet.
func (e *Engine) Queued(id SessionID) int {
	s := e.sessions.get(id)
	if s == nil {
		return 0
	}
	n := 0
	for q := s.queue; len(q) > 0; n++ {
		var c Command
		k, err := readQueued(q, &c)
		if err != nil {
			break
		}
		q = q[k:]
	}
	return n
}
