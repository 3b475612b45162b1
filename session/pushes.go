package session

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Push bounds (spec §B.9: dflockd keeps 64 pushes, up to ~33 KiB, per
// connection). A session whose socket has not taken pushSkip bytes is
// behind: queue groups pass it over and a signal does not count it as a
// receiver. Pushes still queued for it (Post, not yet delivered) count
// only towards twice that: they measure how busy its transport is more
// than the peer. One whose output passes pushCut is disconnected as a
// slow consumer: its subscriptions, waits and holds are cleaned up as for
// any disconnect, and other receivers never wait for it. The gap between
// the bounds absorbs the pushes already on their way when a session was
// found behind.
const (
	pushSkip = 64 << 10
	pushCut  = 4 * pushSkip
	// PushBudget bounds a session's push batch; transports also use it to
	// bound the pushes they let pile up while serving one session's input
	// (Transport Yield).
	PushBudget = 16 << 10
)

// keepBatch is the push batch capacity a session keeps between batches: a
// few pushes' worth, since a server may have many thousand idle
// subscribers; a busier one reallocates per batch, which costs less than
// the writes it batches.
const keepBatch = 1 << 10

// A session with unsent output refreshes its backlog figure now and then:
// a transport may flush on writability without telling the session, so
// without a look a drained subscriber would keep looking full to
// queue-group member choice. The first look comes after recheckFirst; a
// peer that stays stuck is looked at less and less often, up to
// recheckMax apart.
const (
	recheckFirst = 10   // ms
	recheckMax   = 1000 // ms
)

// pushBacklog is what a signal on another goroutine may know about a
// session's unread output — bytes of pushes queued for it and not yet
// written, and what the socket had not taken when the session last
// looked (a transport's buffers may only be read on its goroutine) — plus
// the session-confined push batch.
type pushBacklog struct {
	queued    atomic.Int64
	unsent    atomic.Int64
	batch     []byte // pushes of the current delivery batch, one write
	dirty     bool   // waiting for FlushPushes
	recheckMs int64  // the armed recheck's interval; 0 = none armed
}

// Backlogged reports whether the session is behind (see pushSkip): queue
// groups then try their next member. Safe from any goroutine: it reads
// atomics only.
func (s *Session) Backlogged() bool {
	unsent := s.backlog.unsent.Load()
	return unsent > pushSkip || unsent+s.backlog.queued.Load() > 2*pushSkip
}

// push adds an asynchronous line (sig …, watch …, leader …) to the
// session's batch, which FlushPushes writes once, so a fan-out costs one
// write per receiver and batch, not one per line. A peer that has fallen
// pushCut behind is disconnected instead. It reports whether the session
// newly waits for FlushPushes.
func (s *Session) push(p *engine.Push) bool {
	n := int64(pushLen(p))
	if s.closing {
		s.backlog.queued.Add(-n)
		return false
	}
	if s.t.Unsent() > pushCut {
		s.backlog.queued.Add(-n)
		s.closing = true
		if c := s.t.Scratch().Counters; c != nil {
			c.slow.Add(1)
		}
		s.hub.cfg.Events.Warn("slow consumer disconnected: pushes left unread", "remote", s.remote(),
			"unsent_bytes", s.t.Unsent())
		s.t.Close()
		return false
	}
	if c := s.t.Scratch().Counters; c != nil {
		c.pushes.Add(1)
	}
	s.backlog.batch = parse.AppendPush(s.backlog.batch, p.Kind, p.A, p.B)
	if len(s.backlog.batch) >= PushBudget {
		s.flushPushes() // let the socket take it before the bound is checked again
		return false
	}
	if !s.backlog.dirty {
		s.backlog.dirty = true
		return true
	}
	return false
}

// FlushPushes writes the pushes batched since the last flush; the
// transport calls it after delivering a batch of results.
func (s *Session) FlushPushes() {
	s.backlog.dirty = false
	s.flushPushes()
}

// flushPushes writes the session's push batch. Replies call it first, so a
// reply never overtakes a push queued before it.
func (s *Session) flushPushes() {
	b := s.backlog.batch
	if len(b) == 0 {
		return
	}
	if !s.closed && !s.closing {
		s.write(b)
		if s.t.Unsent() > 0 && s.backlog.recheckMs == 0 {
			s.backlog.recheckMs = recheckFirst
			s.t.SetTimer(s.hub.clock.Now().After(recheckFirst))
		}
	}
	// After the write has been noted in unsent: a reader may count these
	// bytes twice for a moment, but never misses them.
	s.backlog.queued.Add(-int64(len(b)))
	if cap(b) > keepBatch {
		b = nil // a burst's buffer is not kept per session
	}
	s.backlog.batch = b[:0]
}

// noteUnsent publishes how much output the socket has not taken yet.
func (s *Session) noteUnsent() {
	n := int64(s.t.Unsent())
	if s.backlog.unsent.Load() != n {
		s.backlog.unsent.Store(n)
	}
}

// recheckBacklog runs with the session's timer: it refreshes the backlog
// figure and, while output is still unsent after a push, keeps a recheck
// before next.
func (s *Session) recheckBacklog(now timerwheel.Instant, next timerwheel.Tick) timerwheel.Tick {
	if s.backlog.recheckMs == 0 {
		return next
	}
	s.noteUnsent()
	if s.t.Unsent() == 0 {
		s.backlog.recheckMs = 0
		return next
	}
	s.backlog.recheckMs = min(2*s.backlog.recheckMs, recheckMax)
	return min(next, now.After(s.backlog.recheckMs))
}
