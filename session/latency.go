package session

import (
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Request latency by command (dflockd_request_duration_seconds): from a
// request's arrival — the clock reading Input takes once for the whole
// read it came in — to the moment its reply is handed to the transport
// (just before: a client that read its reply finds it in /metrics).
// A request answered at once is answered with the rest of its read: the
// replies of a read are written together at the end of Input, so one
// clock reading there measures every one of them: one clock reading per
// read, not per request. Even that cost a read of one request about 8 %
// (a clock reading is 20–60 ns here, such a read 400 ns on the fake
// transport: BenchmarkCountersCostSingle), so the reads of a transport goroutine
// are timed at most once per latencySampleEvery, by the arrival reading
// Input takes anyway: a goroutine that serves fewer reads than that is
// timed at every read, and a busy one times one read per interval and
// counts the requests of the reads in between with the duration it last
// measured (no older than the interval), so that the counts stay exact
// and the histogram's shape is that of the timed reads, as a sampling
// profiler's is. A request answered later (a
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

// latencySampleEvery is how often, at most, a transport goroutine reads
// the clock at the end of a read to time its replies: a millisecond
// keeps every read of a goroutine serving under a thousand a second
// timed, and costs a busy one a clock reading per thousands of reads.
const latencySampleEvery = timerwheel.Instant(1e6)

// answered counts, by command, the requests answered in the read being
// served: they share one duration, so Input observes each command once
// at its end (two atomic adds), however many came in the read. The last
// duration measured on the goroutine, and when, stand for the reads
// that are not timed.
type answered struct {
	n   [vocab.NumOps]uint32
	ops []vocab.Op // the commands whose n is not 0

	timed  bool               // a read has been timed
	at     timerwheel.Instant // the arrival of the last read timed
	d      timerwheel.Instant // its duration
	bucket int                // and the bucket of d
}

// note records that a request of op is answered in the read being
// served.
func (a *answered) note(op vocab.Op) {
	if a.n[op] == 0 {
		a.ops = append(a.ops, op)
	}
	a.n[op]++
}

// unnote takes a note back: the request was not answered after all. Its
// command may stay listed with a count of 0, which observes nothing.
func (a *answered) unnote(op vocab.Op) { a.n[op]-- }

// observeAnswered observes the requests answered in the read that
// arrived at, whose replies are about to be written: timed, if the
// goroutine timed no read in the last latencySampleEvery, else with the
// duration last measured.
func (s *Session) observeAnswered(sc *Scratch, at timerwheel.Instant) {
	a := &sc.answered
	if !a.timed || at-a.at >= latencySampleEvery || at < a.at {
		a.d = max(s.hub.clock.Now()-at, 0)
		a.bucket = latencyBucket(a.d)
		a.timed, a.at = true, at
	}
	for _, op := range a.ops {
		if n := a.n[op]; n > 0 {
			sc.Counters.latency[op].observe(a.bucket, uint64(n), a.d)
			a.n[op] = 0
		}
	}
	a.ops = a.ops[:0]
}

// observeOwed observes the latency of owed request q, answered now (c:
// the transport's counters, nil if it keeps none).
func (s *Session) observeOwed(c *Counters, q *owedRequest, now timerwheel.Instant) {
	if c == nil {
		return
	}
	d := max(now-q.at, 0)
	c.latency[q.op].observe(latencyBucket(d), 1, d)
}
