// Package suite is the library behind cmd/dflocksuite, the one-command
// comparative benchmark of dflockd-ng: aggregation of repeated runs
// (median, min–max), the memory scenarios, the etcd mutex runner, SVG
// charts and the generated sections of PERF.md (locks and memory; the
// redis-feats primitives and pub/sub fan-out).
package suite
