package session

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// local is a single node's applier: commands run on the hub's engine, on
// the caller's goroutine, and their effects are routed at once. Only a
// request that waits (a lock wait, a blocking pop, a barrier) is owed its
// answer, which the engine delivers as an effect when the wait ends.
type local struct {
	hub *Hub
	eng *engine.Engine
}

func (l *local) open(now timerwheel.Instant) engine.SessionID {
	var fx engine.Effects
	return l.eng.Apply(&engine.Command{Kind: engine.KindOpen, At: now}, &fx).Session
}

func (l *local) apply(c *engine.Command, fx *engine.Effects, r *engine.Result) (int, bool) {
	if c.Kind == engine.KindRequest {
		switch c.Req.Op {
		case vocab.OpBarrier, vocab.OpStableRef:
			// A single node is always caught up, and keeps nothing for a
			// stable-ref: its connection's claims end with it.
			*r = engine.Result{Status: vocab.StatusOK}
			return 0, true
		}
	}
	l.eng.ApplyTo(c, fx, r)
	n := 0
	if len(fx.List) > 0 {
		// Route posts to transports' inboxes and runs no session here,
		// so nothing reuses the scratch *r may be in.
		n = l.hub.Route(fx)
		fx.Reset()
	}
	return n, !r.Blocked
}

func (l *local) close(id engine.SessionID, at timerwheel.Instant, fx *engine.Effects) {
	l.eng.Apply(&engine.Command{Kind: engine.KindClose, Session: id, At: at}, fx)
}

func (l *local) drain(at timerwheel.Instant) {
	var fx engine.Effects
	l.eng.Apply(&engine.Command{Kind: engine.KindDrain, At: at}, &fx)
	l.hub.Route(&fx)
}

func (*local) pipelined() bool { return false }

func (l *local) tenant(id engine.SessionID, name string, q policy.Quota) {
	t := l.eng.TenantNamed(name)
	t.SetLimits(q.Locks, q.Waiters, q.Keys)
	if id != 0 {
		l.eng.SetTenant(id, t)
	}
}

func (l *local) engine() *engine.Engine { return l.eng }

func (l *local) stats(all bool, now timerwheel.Instant, conns int) *vocab.Stats {
	if all {
		return l.eng.Stats(now, conns)
	}
	return l.eng.LockStats(now, conns)
}

func (*local) leading() bool      { return true }
func (*local) leaderAddr() string { return "" }

func (*local) stateNow(now timerwheel.Instant) timerwheel.Instant { return now }

func (*local) local(id engine.SessionID, _ uint64) (engine.SessionID, bool) { return id, true }
