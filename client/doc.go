// Package client is the Go client of dflockd-ng and of dflockd: locks,
// semaphores, read-write locks, counters, a key-value store, lists,
// pub/sub signals, key watches, barriers and leader election over
// dflockd's line protocol.
//
// # Drop-in for dflockd's client
//
// The package offers the exported API of dflockd's own client,
// github.com/mtingers/dflockd/client, of both its main line and its
// redis-feats line, with the same signatures and semantics: a program
// written for it switches by changing the import path. Low-level functions
// take a *Conn and send one request each (Acquire, Release, Renew,
// Enqueue, Wait, the Sem… family, the …WithFence variants, RLock and the
// read-write family, Incr, KVSet, LPush, BLPop, Emit, BarrierWait, …);
// high-level types (Lock, Semaphore, RWLock, Election) dial a connection
// per hold and renew its lease in the background; SignalConn, WatchConn
// and LeaderConn deliver pushes on channels. Errors are the same sentinel
// values (ErrTimeout, ErrNotFound, …), returned unwrapped where dflockd's
// client returns them unwrapped, so both errors.Is and == keep working.
// Their text starts with "client:" rather than "dflockd:".
//
// Fences: dflockd v2 and dflockd-ng put the fence in the token's first 16
// hex digits (FenceFromToken); redis-feats servers, and dflockd-ng with
// --compat=rf, also send it as a separate field, which the …WithFence
// functions return (0 when absent). The Fence methods of Lock, Semaphore,
// RWLock and Election return it whichever way the server sends it: the
// field, or the token's own where the server's tokens carry their fence
// (asked once per connection); 0 means none (servers with random tokens).
//
// # Beyond it
//
//   - Context everywhere: Conn.WithContext binds a context to every request
//     made through the returned Conn, so all functions above honour
//     cancellation and deadlines; the high-level types take one per call.
//   - Lost holds are reported at once: Lock.Lost (and the same method of
//     Semaphore, RWLock, Election) returns a channel closed as soon as a
//     renewal fails or the connection breaks.
//   - Connection reuse: a Conn pipelines requests from many goroutines, and
//     Client shares one connection per server, dialling again when one
//     ends. Keepalive pings stop the server's read timeout from dropping
//     idle connections and their subscriptions.
//   - Cluster mode: with Dialer.Members set, a request refused with
//     error_not_leader <addr> is resent to that leader, only if it is one
//     of the members, at most Dialer.MaxRedirects times.
//   - TLS and auth for every connection through Dialer, including those
//     made to follow redirects; Conn.Do for any command by name.
//
// # Concurrency
//
// A Conn is safe for concurrent use; replies are matched to requests in
// order. The server serves one request of a connection at a time, so a
// request that blocks (a lock wait, a blocking pop, a barrier) delays the
// requests behind it: give blocking work its own connection. Cancelling a
// request in flight closes its connection, because the protocol cannot
// withdraw a request; the server then releases what the connection held.
// The high-level types are safe for concurrent use too, but one value
// tracks one hold at a time.
//
// The package knows nothing of any server's internals: it speaks the wire
// protocol only, and is tested against the dflockd-ng binary.
package client
