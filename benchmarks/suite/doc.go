// Package suite is the library behind cmd/dflocksuite, the one-command
// comparative benchmark of dflockd-ng: aggregation of repeated runs
// (median, min–max), the memory scenarios, the etcd mutex runner, SVG
// charts and the generated section of PERF.md.
package suite
