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
		if max := e.cfg.MaxSubscriptions; max > 0 && !e.subs.Has(s, pattern, group) && e.subs.Count(s) >= max {
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
		e.notify.Deliver(sub, push)
		n++
	}
	for i := range m.Queues {
		q := &m.Queues[i]
		if q.Len() > 0 {
			e.notify.Deliver(q.Member(0), push)
			n++
		}
	}
	return Result{Status: parse.StatusOK, Kind: KindInt, Int: n}
}
