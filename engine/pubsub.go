package engine

import (
	"sync"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Pub/sub signals (spec §B.9): listen/unlisten register a session on a
// pattern (optionally in a queue group) in the engine's Sublist; signal
// pushes "sig <channel> <payload>" to every matching non-grouped
// subscriber once per connection, and to one member of each matching
// queue group, round-robin.

// matchesPool reuses match scratch across signals: Match fills a Matches
// without allocating once it has grown.
var matchesPool = sync.Pool{New: func() any { return new(Matches) }}

func (e *Engine) pubsubOp(s SessionID, r *vocab.Request, fx *Effects) Result {
	switch r.Op {
	case vocab.OpListen:
		pattern, group := string(r.Key), string(r.Value)
		if err := validPattern(pattern); err != nil {
			return status(vocab.StatusError)
		}
		if !e.subs.Has(s, pattern, group) && e.overCap(s) {
			return status(vocab.StatusError) // --max-subscriptions (§B.9), MaxRegistrations
		}
		if _, err := e.subs.Subscribe(s, pattern, group); err != nil {
			return status(vocab.StatusError)
		}
		return status(vocab.StatusOK)
	case vocab.OpUnlisten:
		e.subs.Unsubscribe(s, string(r.Key), string(r.Value))
		return status(vocab.StatusOK) // always ok, as dflockd's rf line
	}
	return e.signal(r.Key, r.Value, fx)
}

// overCap reports whether a new listen registration would pass a cap:
// --max-subscriptions counts listen registrations alone in v2 (as
// dflockd's v1.11+ line), listen + watch + observe in rf; MaxRegistrations
// counts all three.
func (e *Engine) overCap(s SessionID) bool {
	all := e.subscriptions(s)
	if max := e.cfg.MaxSubscriptions; max > 0 && !e.rf() && e.subs.Count(s) >= max {
		return true
	}
	return all >= e.regCap()
}

// signal appends one push per receiver: every matching non-grouped
// subscriber once, and each matching queue group as one group effect
// whose member the delivery picks. Its Result is KindReceivers: the
// delivery counts the receivers it reached (spec §B.9, and Effect).
func (e *Engine) signal(channel, payload []byte, fx *Effects) Result {
	res := Result{Status: vocab.StatusOK, Kind: KindReceivers}
	if e.subs.Len() == 0 {
		return res
	}
	m := matchesPool.Get().(*Matches)
	defer matchesPool.Put(m)
	e.subs.Match(channel, m)
	if m.Empty() {
		return res
	}
	// One immutable copy of channel and payload shared by every receiver.
	b := make([]byte, 0, len(channel)+len(payload))
	b = append(append(b, channel...), payload...)
	text := string(b)
	push := pushResult(vocab.PushSignal, text[:len(channel)], text[len(channel):])
	for _, sub := range m.Subs {
		fx.add(sub, push)
	}
	for i := range m.Queues {
		q := &m.Queues[i]
		if q.Len() == 0 {
			continue
		}
		fx.List = append(fx.List, Effect{To: q.Member(0), Result: push, Group: q.members, Start: q.start})
	}
	return res
}
