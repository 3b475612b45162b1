// Package metrics is dflockd-ng's Prometheus exposition (GET /metrics):
// one collector that reads the engine, the session hub's request
// counters, the fence allocator and the transports' connection counts at
// scrape time. Nothing here runs on the request path: the engine counts
// events with plain increments under locks it holds anyway, transports
// count requests with one uncontended atomic add (session.Counters), and
// a scrape sums them. The request latency histograms by command
// (dflockd_request_duration_seconds) are kept the same way: bucket
// counts that the transport goroutine adds to, summed at a scrape
// (session/latency.go). The exceptions are a cluster member's RaftEvents
// (raft.go), observed as raft moves: once per leader change or per batch
// of requests, never per request. dflockd_build_info (build.go) says
// which binary runs; dflockd_tls_certificate_expiry_timestamp_seconds
// (tls.go) when its certificates run out.
//
// Names follow dflockd v2's /metrics where it has one (dflockd_ready,
// dflockd_connections, dflockd_locks_held, dflockd_lock_waiters,
// dflockd_semaphore_holders, dflockd_semaphore_waiters, and the HTTP
// API's own dflockd_http_*), so its dashboards keep working.
package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Sources are what a scrape reads. Engine, Fences, Transports, Ready and
// Raft may be nil.
type Sources struct {
	// Engine: nil reads the hub's at each scrape (a cluster member's
	// replica is replaced when it installs a snapshot, and is nil before
	// the cluster's first entry: no engine metrics then).
	Engine *engine.Engine
	Hub    *session.Hub
	Fences *fence.Allocator
	// Transports counts open connections by transport name ("tcp",
	// "tls", "godistlock", "http" sessions...).
	Transports map[string]func() int
	// Ready reports whether the server takes new work (false while
	// draining).
	Ready func() bool
	// Start is when the server started (dflockd_uptime_seconds).
	Start time.Time
	// Raft, on a cluster member, reads its raft state for the
	// dflockd_raft_* metrics (raft.go).
	Raft func() Raft
	// RaftEvents, on a cluster member, are its leader change counter and
	// commit and apply histograms (raft.go).
	RaftEvents *RaftEvents
	// Build labels dflockd_build_info (build.go); a zero Version leaves
	// it out.
	Build Build
	// FDExhausted and FDRefused, if set, count accepts that failed for
	// want of file descriptors and the connections refused then
	// (internal/fdguard).
	FDExhausted, FDRefused func() uint64
	// TLSNotAfter, by the flag that names a certificate ("tls-cert",
	// "raft-tls-cert"), reads when the certificate in use expires
	// (tls.go); a zero time leaves it out.
	TLSNotAfter map[string]func() time.Time
}

// NewRegistry returns a registry with the server's collector and the Go
// runtime and process collectors.
func NewRegistry(src Sources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(src))
	if src.Raft != nil {
		reg.MustRegister(newRaftCollector(src.Raft))
	}
	if src.RaftEvents != nil {
		reg.MustRegister(src.RaftEvents.collectors()...)
	}
	if src.Build.Version != "" {
		reg.MustRegister(buildInfo(src.Build))
	}
	if len(src.TLSNotAfter) > 0 {
		reg.MustRegister(newTLSExpiry(src.TLSNotAfter))
	}
	reg.MustRegister(collectors.NewGoCollector())
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

type collector struct {
	src   Sources
	descs map[string]*prometheus.Desc
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

func newCollector(src Sources) *collector {
	c := &collector{src: src, descs: map[string]*prometheus.Desc{}}
	for _, d := range []struct {
		name, help string
		labels     []string
	}{
		{"dflockd_ready", "1 while the server takes new work, 0 while it drains or, on a cluster member, while it knows of no leader.", nil},
		{"dflockd_uptime_seconds", "Seconds since the server started.", nil},
		{"dflockd_connections", "Open client sessions: connections of every transport plus HTTP sessions.", nil},
		{"dflockd_transport_connections", "Open connections by transport.", []string{"transport"}},
		{"dflockd_keys", "Lock, semaphore and read-write lock keys in memory (--max-locks counts them).", nil},
		{"dflockd_locks_held", "Currently held locks.", nil},
		{"dflockd_lock_waiters", "Current lock waiters.", nil},
		{"dflockd_semaphore_holders", "Currently held semaphore slots.", nil},
		{"dflockd_semaphore_waiters", "Current semaphore waiters.", nil},
		{"dflockd_rw_lock_holders", "Current holders of read-write locks (readers and writers).", nil},
		{"dflockd_rw_lock_waiters", "Current waiters of read-write locks.", nil},
		{"dflockd_grants_total", "Grants of locks, semaphore slots and read-write locks.", nil},
		{"dflockd_releases_total", "Holds that ended, for any reason: release, lease expiry, disconnect.", nil},
		{"dflockd_lease_expiries_total", "Holds that ended because their lease ran out.", nil},
		{"dflockd_timeouts_total", "Acquires and waits that timed out.", nil},
		{"dflockd_lock_wait_seconds", "Time from an acquire of a lock, semaphore or read-write lock to its grant (0 on the fast path) or timeout, at millisecond resolution.", nil},
		{"dflockd_lock_hold_seconds", "Time from a grant to the end of the hold: release, lease expiry, disconnect, resignation or force release, at millisecond resolution.", nil},
		{"dflockd_requests_total", "Requests received on the line protocol, by command (unknown for the unrecognised).", []string{"command"}},
		{"dflockd_request_duration_seconds", "Time from a line-protocol request's arrival to its reply, by command (a blocking acquire counts its wait; on a cluster member, the trip through the log).", []string{"command"}},
		{"dflockd_errors_total", "Error replies on the line protocol, by status.", []string{"status"}},
		{"dflockd_pushes_total", "Pushes written (sig, watch, leader lines).", nil},
		{"dflockd_slow_consumers_total", "Connections cut off for leaving too many pushes unread.", nil},
		{"dflockd_accept_fd_exhausted_total", "Accepts that failed because the process ran out of file descriptors (the server keeps serving open connections and retries with a backoff).", nil},
		{"dflockd_accept_fd_refused_total", "Connections closed at once, on a spare descriptor, because the process was out of file descriptors.", nil},
		{"dflockd_fence_last", "Highest fencing token value issued (a float: past 2^53 its last digits are lost; the _high and _low gauges give it exactly).", nil},
		{"dflockd_fence_last_high", "Upper 32 bits of the highest fence issued: fence = high * 4294967296 + low, exactly.", nil},
		{"dflockd_fence_last_low", "Lower 32 bits of the highest fence issued.", nil},
		{"dflockd_fence_ceiling", "Durable fence ceiling on disk (--fence-state-file); every fence issued is below it.", nil},
		{"dflockd_fence_durable", "1 with a --fence-state-file, else 0.", nil},
		{"dflockd_fence_persists_total", "Fence ceilings made durable.", nil},
		{"dflockd_fence_persist_stalls_total", "Grants that waited for a fence ceiling to be persisted.", nil},
		{"dflockd_fence_persist_failed", "1 once persisting the fence ceiling has failed (grants answer error), else 0.", nil},
		{"dflockd_fence_persist_max_seconds", "Longest persist of the fence ceiling so far.", nil},
		{"dflockd_policy_info", "With --policy-file: 1, labelled with the policy's version (the first 16 hex digits of the file's SHA-256); members that show different versions enforce different policies.", []string{"version"}},
		{"dflockd_policy_identities", "With --policy-file: identities the policy defines.", nil},
		{"dflockd_identity_connections", "With --policy-file: open connections by identity.", []string{"identity"}},
		{"dflockd_denied_total", "With --policy-file: requests refused by the policy, by identity and class of command.", []string{"identity", "class"}},
		{"dflockd_quota_exceeded_total", "With --policy-file: requests or connections past an identity's quota, by identity and quota (locks, waiters, keys, conns; rate counts requests paced).", []string{"identity", "kind"}},
	} {
		c.descs[d.name] = desc(d.name, d.help, d.labels...)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	counter := func(name string, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v), labels...)
	}
	src := c.src
	ready := 1.0
	if src.Ready != nil && !src.Ready() {
		ready = 0
	}
	gauge("dflockd_ready", ready)
	if !src.Start.IsZero() {
		gauge("dflockd_uptime_seconds", time.Since(src.Start).Seconds())
	}
	gauge("dflockd_connections", float64(src.Hub.Connections()))
	for name, n := range src.Transports {
		gauge("dflockd_transport_connections", float64(n()), name)
	}

	eng := src.Engine
	if eng == nil {
		eng = src.Hub.Engine()
	}
	if eng != nil {
		c.collectEngine(ch, eng)
	}

	counts := src.Hub.Counts()
	for op := range vocab.NumOps {
		if n := counts.Requests[op]; n > 0 {
			name := vocab.Op(op).String()
			if vocab.Op(op) == vocab.OpUnknown {
				name = "unknown"
			}
			counter("dflockd_requests_total", n, name)
		}
		c.collectLatency(ch, op, &counts.Latency[op])
	}
	for st := range vocab.NumStatuses {
		name := vocab.Status(st).String()
		if n := counts.Replies[st]; n > 0 && strings.HasPrefix(name, "error") {
			counter("dflockd_errors_total", n, name)
		}
	}
	if src.FDExhausted != nil {
		counter("dflockd_accept_fd_exhausted_total", src.FDExhausted())
	}
	if src.FDRefused != nil {
		counter("dflockd_accept_fd_refused_total", src.FDRefused())
	}
	counter("dflockd_pushes_total", counts.Pushes)
	counter("dflockd_slow_consumers_total", counts.SlowConsumers)
	c.collectPolicy(gauge, counter)

	if src.Fences != nil {
		fs := src.Fences.Stats()
		durable, failed := 0.0, 0.0
		if fs.Durable {
			durable = 1
			gauge("dflockd_fence_ceiling", float64(fs.Ceiling))
		}
		if fs.Failed {
			failed = 1
		}
		gauge("dflockd_fence_durable", durable)
		gauge("dflockd_fence_persist_failed", failed)
		counter("dflockd_fence_persists_total", fs.Persists)
		counter("dflockd_fence_persist_stalls_total", fs.Stalls)
		gauge("dflockd_fence_persist_max_seconds", fs.MaxPersist.Seconds())
	}
}

// collectLatency sends op's request latency histogram, if it has
// observations.
func (c *collector) collectLatency(ch chan<- prometheus.Metric, op int, l *session.Latency) {
	var total uint64
	buckets := make(map[float64]uint64, len(session.LatencyBounds))
	for i, bound := range session.LatencyBounds {
		total += l.Counts[i]
		buckets[bound] = total // cumulative, as Prometheus has them
	}
	total += l.Counts[len(session.LatencyBounds)]
	if total == 0 {
		return
	}
	name := vocab.Op(op).String()
	if vocab.Op(op) == vocab.OpUnknown {
		name = "unknown"
	}
	ch <- prometheus.MustNewConstHistogram(c.descs["dflockd_request_duration_seconds"], total,
		float64(l.SumNs)/1e9, buckets, name)
}

// collectEngine is the part of Collect that reads the engine.
func (c *collector) collectEngine(ch chan<- prometheus.Metric, eng *engine.Engine) {
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v)
	}
	counter := func(name string, v uint64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, float64(v))
	}
	m := eng.Metrics()
	gauge("dflockd_keys", float64(m.Keys))
	gauge("dflockd_locks_held", float64(m.LocksHeld))
	gauge("dflockd_lock_waiters", float64(m.LockWaiters))
	gauge("dflockd_semaphore_holders", float64(m.SemaphoreSlots))
	gauge("dflockd_semaphore_waiters", float64(m.SemaphoreWaiters))
	gauge("dflockd_rw_lock_holders", float64(m.RWHolders))
	gauge("dflockd_rw_lock_waiters", float64(m.RWWaiters))
	counter("dflockd_grants_total", m.Grants)
	counter("dflockd_releases_total", m.Releases)
	counter("dflockd_lease_expiries_total", m.LeaseExpiries)
	counter("dflockd_timeouts_total", m.Timeouts)
	wait, hold := eng.Latencies()
	ch <- latencyHistogram(c.descs["dflockd_lock_wait_seconds"], &wait)
	ch <- latencyHistogram(c.descs["dflockd_lock_hold_seconds"], &hold)
	last := eng.LastFence()
	gauge("dflockd_fence_last", float64(last))
	// A float64 holds 53 bits: fences seeded from the clock (~1.8e18) lose
	// their last digits in dflockd_fence_last, which is kept for dflockd's
	// dashboards; the halves are exact.
	gauge("dflockd_fence_last_high", float64(last>>32))
	gauge("dflockd_fence_last_low", float64(last&0xffffffff))
}

// latencyHistogram is one of the engine's latency histograms as
// Prometheus wants it: cumulative counts keyed by upper bound in seconds.
func latencyHistogram(d *prometheus.Desc, h *engine.Latency) prometheus.Metric {
	buckets := make(map[float64]uint64, len(engine.LatencyBoundsMs))
	var cum uint64
	for i, ms := range engine.LatencyBoundsMs {
		cum += h.Counts[i]
		buckets[float64(ms)/1000] = cum
	}
	return prometheus.MustNewConstHistogram(d, h.Count(), float64(h.SumMs)/1000, buckets)
}
