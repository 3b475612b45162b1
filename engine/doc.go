// Package engine holds the semantics of every dflockd primitive: FIFO locks
// and semaphores with leases, two-phase enqueue/wait, disconnect cleanup,
// idle-key GC and the stats snapshot; and those of the redis-feats line,
// one file each: read-write locks (in lock.go's mode), counter.go, kv.go,
// list.go, pubsub.go over sublist.go, watch.go, barrier.go, election.go.
//
// State is split into shards chosen by xxhash of the key; each shard is a
// mutex, the key maps, a timer wheel for its leases and timeouts, and free
// lists that make the uncontended acquire/release path allocation-free.
// Requests run to completion on the goroutine that calls Do (an event loop);
// events aimed at another connection (a grant to a waiter, a timeout) are
// handed to the Notifier, which must queue them without blocking.
//
// Concurrency: Engine methods are safe for concurrent use, except that all
// calls carrying one Session must come from one goroutine at a time (the
// connection's event loop). See LOCKING.md for the lock order.
//
// The engine knows nothing of gnet or sockets. Given the same clock readings
// and entropy it makes the same decisions, which keeps it testable with a
// fake clock and replicable later.
package engine
