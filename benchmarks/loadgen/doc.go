// Package loadgen is a closed-loop load generator for lock servers that speak
// the dflockd line protocol or Redis RESP.
//
// Run opens Config.Conns connections. Each connection keeps exactly
// Config.Depth requests in flight: it writes them, reads the replies in order
// and, for every reply, writes the next request of the same "slot" (a slot is
// one independent acquire/release cycle; a connection has Depth slots). So the
// load is closed: a slow server gets fewer requests, never a growing queue.
// The redis-feats primitive workloads (incr, kv, list) use the same slots;
// their cycle is one incr, or a write and its read-back.
//
// Measurement. Time is monotonic nanoseconds since the start of the run. A
// request's latency runs from just before the write(2) that carried it to
// just after the read(2) that returned its reply; replies parsed from one read
// share one timestamp. Only replies that arrive inside the measured window
// [Warmup, Warmup+Duration) are counted. Each connection owns its histograms
// and counters (no locks, no atomics on the request path); they are merged
// after the run.
//
// Validation. Every reply is checked against the request it answers: status,
// token shape, lease, integer value. An unexpected reply, a malformed frame, a
// closed connection or a reply with no request in flight is an error: Run
// stops all connections and returns a *RunError naming the target, the
// request and the reply. A run with an error has no throughput.
//
// Concurrency contract: Run may be called from several goroutines at once
// (each call owns its connections); a Histogram is not safe for concurrent
// use. The request path allocates nothing: request bytes are appended to a
// reused buffer and replies are parsed in place (Reply fields alias the read
// buffer and die with the next read).
package loadgen
