// Package benchmarks holds the comparative benchmark suite of dflockd-ng.
//
// The suite measures a server from the outside, over loopback sockets, the
// way a client sees it. Its parts, one folder each:
//
//   - loadgen: the closed-loop load generator (dflockd line protocol and
//     Redis RESP), with per-request latency histograms and strict reply
//     validation: an unexpected reply fails the run instead of producing a
//     throughput figure.
//   - ceiling: a gnet v2 server with dflockd's framing and no lock logic;
//     the upper bound any gnet-based lock server can reach on a machine.
//   - baseline: a server built the way dflockd itself is built (goroutine
//     per connection, one global mutex); the reference when no dflockd
//     binary is at hand.
//   - fanout: pub/sub fan-out to many subscribers, with and without one
//     that never reads.
//   - procstat: CPU time and resident memory of a server process from /proc.
//   - cmd/dflockbench: the command line driver; cmd/dflocksuite (with
//     suite) the whole comparison in one command; cmd/ceiling and
//     cmd/baseline run the two reference servers standalone.
//
// This package itself only holds Go benchmarks that tie the parts together
// (e2e_test.go).
package benchmarks
