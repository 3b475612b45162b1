package session

import (
	"sync"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Counters are the request-path counts one transport goroutine keeps for
// /metrics (a gnet loop, a TLS connection): requests by command, replies
// by status, pushes written and slow consumers cut off. Only that
// goroutine adds; a scrape reads them all at once through the Hub. An
// add is an uncontended atomic on memory no other goroutine writes, so
// counting costs the request path one atomic add per request.
//
// A transport enables counting by setting Scratch.Counters (nil: none)
// and registering it with Hub.RegisterCounters.
type Counters struct {
	requests [vocab.NumOps]atomic.Uint64
	replies  [vocab.NumStatuses]atomic.Uint64 // by status; error_* ones are the errors
	pushes   atomic.Uint64
	slow     atomic.Uint64
	latency  [vocab.NumOps]latencyHist // by command (latency.go)
}

// Counts is a sum of Counters, as a scrape sees it.
type Counts struct {
	Requests      [vocab.NumOps]uint64
	Replies       [vocab.NumStatuses]uint64
	Pushes        uint64
	SlowConsumers uint64
	Latency       [vocab.NumOps]Latency
}

func (c *Counters) addTo(out *Counts) {
	for i := range c.requests {
		out.Requests[i] += c.requests[i].Load()
	}
	for i := range c.replies {
		out.Replies[i] += c.replies[i].Load()
	}
	for i := range c.latency {
		c.latency[i].addTo(&out.Latency[i])
	}
	out.Pushes += c.pushes.Load()
	out.SlowConsumers += c.slow.Load()
}

// counterSet is the hub's registry of live Counters plus the sum of the
// retired ones (transports that ended: a closed TLS connection).
type counterSet struct {
	mu      sync.Mutex
	live    map[*Counters]struct{}
	retired Counts
}

// RegisterCounters adds c to what Counts sums.
func (h *Hub) RegisterCounters(c *Counters) {
	h.counters.mu.Lock()
	if h.counters.live == nil {
		h.counters.live = make(map[*Counters]struct{})
	}
	h.counters.live[c] = struct{}{}
	h.counters.mu.Unlock()
}

// RetireCounters folds c's counts into the hub's and forgets c; its
// transport must not count into it any more.
func (h *Hub) RetireCounters(c *Counters) {
	h.counters.mu.Lock()
	delete(h.counters.live, c)
	c.addTo(&h.counters.retired)
	h.counters.mu.Unlock()
}

// Counts sums every registered and retired Counters.
func (h *Hub) Counts() Counts {
	h.counters.mu.Lock()
	defer h.counters.mu.Unlock()
	out := h.counters.retired
	for c := range h.counters.live {
		c.addTo(&out)
	}
	return out
}

// countRequest counts a request of op on the session's transport.
//
// With counting on, it also notes the request as answered in the read
// being served (latency.go); the rare request that is not (owed, a
// pending auth, a retry) is taken back when exec returns without a
// reply. Noting it here rather than after exec keeps the request path
// without counters free of another look at the scratch.
func (s *Session) countRequest(op vocab.Op) {
	if sc := s.t.Scratch(); sc.Counters != nil {
		sc.Counters.requests[op].Add(1)
		sc.answered.note(op)
		s.noted, s.noting = op, true
	}
}

// countReply counts a reply's status; only statuses other than ok are
// counted, so the common reply costs a comparison.
func (s *Session) countReply(st vocab.Status) {
	if st == vocab.StatusOK {
		return
	}
	if c := s.t.Scratch().Counters; c != nil {
		c.replies[st].Add(1)
	}
}
