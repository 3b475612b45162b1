package engine

import (
	"sync"

	"github.com/dflockd-ng/dflockd/parse"
)

// Pub/sub signals (spec §B.9): listen/unlisten register a session on a
// pattern (optionally in a queue group) in the engine's Sublist; signal
// pushes "sig <channel> <payload>" to every matching non-grouped
// subscriber once per connection, and to one member of each matching
// queue group, round-robin.

// matchesPool reuses match scratch across signals: Match fills a Matches
// without allocating once it has grown.
var matchesPool = sync.Pool{New: func() any { return new(Matches) }}

func (e *Engine) pubsubOp(s *Session, r *parse.Request) Result {
	switch r.Op {
	case parse.OpListen:
		pattern, group := string(r.Key), string(r.Value)
		if err := validPattern(pattern); err != nil {
			return status(parse.StatusError)
		}
		if max := e.cfg.MaxSubscriptions; max > 0 && !e.subs.Has(s, pattern, group) && e.listenCount(s) >= max {
			return status(parse.StatusError) // --max-subscriptions (§B.9)
		}
		if _, err := e.subs.Subscribe(s, pattern, group); err != nil {
			return status(parse.StatusError)
		}
		return status(parse.StatusOK)
	case parse.OpUnlisten:
		e.subs.Unsubscribe(s, string(r.Key), string(r.Value))
		return status(parse.StatusOK) // always ok, as dflockd's rf line
	}
	return e.signal(r.Key, r.Value)
}

// listenCount is what --max-subscriptions caps for listen: listen
// registrations alone in v2 (as dflockd's v1.11+ line), listen + watch +
// observe in rf.
func (e *Engine) listenCount(s *Session) int {
	if e.rf() {
		return e.subscriptions(s)
	}
	return e.subs.Count(s)
}

// signal delivers one message and answers "ok <receivers>": successful
// non-grouped deliveries plus the groups that delivered.
func (e *Engine) signal(channel, payload []byte) Result {
	if e.subs.Len() == 0 {
		return Result{Status: parse.StatusOK, Kind: KindInt}
	}
	m := matchesPool.Get().(*Matches)
	defer matchesPool.Put(m)
	e.subs.Match(channel, m)
	if m.Empty() {
		return Result{Status: parse.StatusOK, Kind: KindInt}
	}
	// One immutable line shared by every receiver.
	line := make([]byte, 0, len("sig  ")+len(channel)+len(payload))
	line = append(line, "sig "...)
	line = append(line, channel...)
	line = append(line, ' ')
	line = append(line, payload...)
	push := Result{Status: parse.StatusOK, Kind: KindPush, Value: string(line)}
	n := int64(0)
	for _, sub := range m.Subs {
		// A backlogged receiver still gets the push, which disconnects
		// it as a slow consumer; it does not count as a delivery.
		if !e.notify.Backlogged(sub) {
			n++
		}
		e.notify.Deliver(sub, push)
	}
	for i := range m.Queues {
		if e.deliverToGroup(&m.Queues[i], push) {
			n++
		}
	}
	return Result{Status: parse.StatusOK, Kind: KindInt, Int: n}
}

// deliverToGroup gives push to one member of a queue group: the
// round-robin choice, or the next member after it that is not backlogged.
// When all are, the chosen one gets it (and is disconnected as a slow
// consumer) and the group does not count (spec §B.9).
func (e *Engine) deliverToGroup(q *QueueMatch, push Result) bool {
	if q.Len() == 0 {
		return false
	}
	for i := 0; i < q.Len(); i++ {
		if s := q.Member(i); !e.notify.Backlogged(s) {
			e.notify.Deliver(s, push)
			return true
		}
	}
	e.notify.Deliver(q.Member(0), push)
	return false
}
