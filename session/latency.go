package session

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Request latency by command (dflockd_request_duration_seconds): from a
// request's arrival — the clock reading Input takes once for the whole
// read it came in — to the moment its reply is handed to the transport
// (just before: a client that read its reply finds it in /metrics).
// A request answered at once is answered with the rest of its read: the
// replies of a read are written together at the end of Input, so one
// clock reading there measures every one of them, and the read costs one
// clock reading more, not one per request. A request answered later (a
// lock that waits, and on a cluster member every request, answered when
// its entry applies) is measured when its owed answer is written: a
// blocking acquire's latency includes its wait, as the HTTP API's
// histogram counts a blocking acquire's wait. Requests withdrawn
// unanswered (the connection closed) are not observed.
//
// Like the request counters, a histogram is a set of atomics that only
// its transport goroutine adds to: no lock, no allocation, and the
// per-command children are an array indexed by Op rather than a label
// lookup.

// LatencyBounds are the upper bounds, in seconds, of the histogram's
// buckets: from a tenth of a millisecond (a request answered from memory
// in a read of many) to a minute (a waiting acquire).
var LatencyBounds = [...]float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// latencyBoundsNs are LatencyBounds in the clock's nanoseconds.
var latencyBoundsNs = func() (b [len(LatencyBounds)]timerwheel.Instant) {
	for i, s := range LatencyBounds {
		b[i] = timerwheel.Instant(s * 1e9)
	}
	return b
}()

// latencyHist is one command's histogram: counts by bucket (not
// cumulative; the last is +Inf) and the sum of the durations.
type latencyHist struct {
	counts [len(LatencyBounds) + 1]atomic.Uint64
	sumNs  atomic.Uint64
}

// Latency is one command's histogram as a scrape sees it: Counts[i] are
// the observations in bucket i alone (≤ LatencyBounds[i], above the one
// before; the last one past every bound).
type Latency struct {
	Counts [len(LatencyBounds) + 1]uint64
	SumNs  uint64
}

func (h *latencyHist) addTo(out *Latency) {
	for i := range h.counts {
		out.Counts[i] += h.counts[i].Load()
	}
	out.SumNs += h.sumNs.Load()
}

// latencyBucket is the bucket of a duration of d nanoseconds.
func latencyBucket(d timerwheel.Instant) int {
	for i, b := range latencyBoundsNs {
		if d <= b {
			return i
		}
	}
	return len(latencyBoundsNs)
}

// observe observes n requests that took d each.
func (h *latencyHist) observe(bucket int, n uint64, d timerwheel.Instant) {
	h.counts[bucket].Add(n)
	h.sumNs.Add(n * uint64(d))
}

// answered counts, by command, the requests answered in the read being
// served: they share one duration, so Input observes each command once
// at its end (two atomic adds), however many came in the read.
type answered struct {
	n   [parse.NumOps]uint32
	ops []parse.Op // the commands whose n is not 0
}

// noteAnswered records that a request of op was answered in the read
// being served.
func (s *Session) noteAnswered(op parse.Op) {
	a := &s.t.Scratch().answered
	if a.n[op] == 0 {
		a.ops = append(a.ops, op)
	}
	a.n[op]++
}

// observeAnswered observes the requests answered in the read that
// arrived at, now that their replies are written.
func (s *Session) observeAnswered(sc *Scratch, at timerwheel.Instant) {
	a := &sc.answered
	d := max(s.hub.clock.Now()-at, 0)
	b := latencyBucket(d)
	for _, op := range a.ops {
		sc.Counters.latency[op].observe(b, uint64(a.n[op]), d)
		a.n[op] = 0
	}
	a.ops = a.ops[:0]
}

// owedRequest is a request whose answer is owed: its command and when
// it arrived.
type owedRequest struct {
	at timerwheel.Instant
	op parse.Op
}

// owedLatency is a session's FIFO of owed requests, a ring as long as
// what may be owed at once: one on a single node, held inline, maxOwed
// on a cluster member, allocated at its first owed answer.
type owedLatency struct {
	inline     [1]owedRequest
	ring       []owedRequest
	head, size int
}

// noteOwed records a request whose answer is owed, in the order they
// will be answered.
func (s *Session) noteOwed(op parse.Op, at timerwheel.Instant) {
	if s.t.Scratch().Counters == nil {
		return
	}
	q := &s.owedLat
	if q.ring == nil {
		q.ring = q.inline[:]
		if s.hub.app.pipelined() {
			q.ring = make([]owedRequest, maxOwed)
		}
	}
	if q.size == len(q.ring) {
		return // cannot happen while owed ≤ maxOwed; unmeasured if it did
	}
	q.ring[(q.head+q.size)%len(q.ring)] = owedRequest{at: at, op: op}
	q.size++
}

// observeOwed observes the n oldest owed requests, answered now.
func (s *Session) observeOwed(n int) {
	c, q := s.t.Scratch().Counters, &s.owedLat
	if c == nil || q.size == 0 {
		return
	}
	now := s.hub.clock.Now()
	for range min(n, q.size) {
		r := q.ring[q.head]
		d := max(now-r.at, 0)
		c.latency[r.op].observe(latencyBucket(d), 1, d)
		q.head = (q.head + 1) % len(q.ring)
		q.size--
	}
}
