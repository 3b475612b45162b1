// Package engine holds the semantics of every dflockd primitive, as a
// deterministic state machine: FIFO locks and semaphores with leases,
// two-phase enqueue/wait, disconnect cleanup, idle-key GC and the stats
// snapshot; and those of the redis-feats line, one file each: read-write
// locks (in lock.go's mode), counter.go, kv.go, list.go, pubsub.go over
// sublist.go, watch.go, barrier.go, election.go.
//
// Commands in, results and effects out. A Command is a value: the session
// it comes from (a number), the operation and its arguments, and the time
// it happens at. Apply runs it and returns the caller's Result; what it
// does to other sessions (a grant to a waiter, a timeout, a push) is
// appended to a caller-owned Effects, addressed by session id, and
// delivered by the caller once the engine's locks are released. Time is an
// input like any other: Advance(at) fires the timers due by at through the
// same code. A session's open and close, GC and drain are commands too.
// The fence counter is engine state, and token salts are a keyed hash of
// the fence (token.go). So the engine starts no goroutine, reads no clock
// and no randomness, and two engines fed the same commands make the same
// decisions, in the same order: the replicas of a cluster, or a recorded
// log replayed in a test.
//
// The lock observatory reads the state without changing it: inspect.go
// lists keys with their holders and FIFOs, waitgraph.go takes the
// wait-for snapshot package deadlock searches, and events.go keeps an
// optional per-shard ring of lock events (Config.Events), recorded under
// the shard lock each command holds anyway. forcerelease.go is an
// operator's release of a holder.
//
// State is split into shards chosen by xxhash of the key; each shard is a
// mutex, the key maps, a timer wheel for its leases and timeouts, and free
// lists that make the uncontended acquire/release path allocation-free.
//
// Concurrency: Apply and Advance are safe for concurrent use, except that
// the commands of one session must be applied one at a time, in order.
// A request of a session whose request waits queues behind it and runs in
// the Apply that ends the wait, whichever session's command that is
// (queue.go): only a caller that applies every command from one goroutine
// (a replicated log) may send them; a single node's sessions stop reading
// while a request waits, so theirs never queue. See LOCKING.md for the
// lock order.
//
// The engine knows nothing of transports, gnet or sockets, and nothing of
// the wire text: parse encodes what it returns.
package engine
