// Package baseline is a lock server built the way dflockd itself is built,
// used as the reference point where no dflockd binary is installed.
//
// Architecture (dflockd v1.10–v2, see the compatibility spec §A, §B, §D):
// one goroutine per connection reading through a 4 KiB bufio.Reader with a
// read deadline armed before every line, one write(2) per reply under a
// write deadline, ONE global mutex over a map of resources, FIFO waiters
// parked on channels, random 32-hex tokens from crypto/rand, and leases
// enforced by a sweeper goroutine every second (plus opportunistically on
// acquire). Locks and semaphores live in separate namespaces, as in v1.14+.
//
// Commands: l, r, n, sl, sr, sn, ping, with dflockd v2's replies. Not
// implemented, because no workload uses them: e/w two-phase locks, stats,
// auth, TLS, the peer-close watcher of blocked connections.
//
// Deliberate differences that favour the baseline (so a speed-up measured
// against it is, if anything, understated): lines are read with
// bufio.ReadSlice rather than byte by byte.
//
// Concurrency: every field of the lock table is guarded by table.mu; a
// connection goroutine owns its reader and reply buffer.
package baseline
