package engine

import "github.com/dflockd-ng/dflockd/vocab"

// Key watch (spec §B.10): a session watching a key or pattern gets
// "watch <event> <key>" for every matching event, once per connection
// however many of its patterns match, its own events included. Events
// are raised under the key's shard lock (lock order: shard.mu →
// Sublist.mu, LOCKING.md) and cost one atomic load when nobody watches.

// Event names, as dflockd's redis-feats line emits them.
const (
	evAcquire = "acquire"
	evRelease = "release"
)

func (e *Engine) watchOp(s SessionID, r *vocab.Request) Result {
	pattern := string(r.Key)
	if r.Op == vocab.OpUnwatch {
		e.watches.Unsubscribe(s, pattern, "")
		return status(vocab.StatusOK)
	}
	if err := validPattern(pattern); err != nil {
		return status(vocab.StatusError)
	}
	// rf counts listen, watch and observe registrations against one cap
	// (§B.9); MaxRegistrations counts them in every profile.
	if !e.watches.Has(s, pattern, "") && e.subscriptions(s) >= e.regCap() {
		return status(vocab.StatusError)
	}
	if _, err := e.watches.Subscribe(s, pattern, ""); err != nil {
		return status(vocab.StatusError)
	}
	return status(vocab.StatusOK)
}

// watching reports whether anyone watches any key: callers that would
// make a key string only for watchEventLocked check it first.
func (sh *shard) watching() bool { return sh.eng.watches.Len() != 0 }

// watchEventLocked pushes event for key to its watchers.
func (sh *shard) watchEventLocked(event, key string) {
	e := sh.eng
	if e.watches.Len() == 0 {
		return
	}
	m := matchesPool.Get().(*Matches)
	defer matchesPool.Put(m)
	e.watches.Match([]byte(key), m)
	if len(m.Subs) == 0 {
		return
	}
	push := pushResult(vocab.PushWatch, event, key)
	for _, s := range m.Subs {
		sh.fx.add(s, push)
	}
}
