// Package timerwheel keeps every timeout of the server — lease expiries,
// acquire timeouts, blocking pops, barriers, read timeouts — in hierarchical
// timer wheels, with no goroutine and no time.Timer per timer.
//
// A Wheel is 6 levels × 64 slots over 1 ms ticks (Varghese–Lauck scheme 7):
// a timer sits in the coarsest level its deadline needs and cascades to finer
// levels as time reaches its slot, so it fires exactly on its millisecond,
// never early. Timers are Nodes embedded in the records that own them, so
// Add, Cancel and Reset are O(1) list splices that never allocate, and a
// per-level occupancy bitmap lets Advance and NextDeadline skip empty time:
// jumping a day ahead costs one step per occupied slot, not one per tick.
//
// Concurrency: a Wheel is a plain data structure and is not safe for
// concurrent use; its owner guards it (one wheel per shard, under the shard
// mutex; or one per event loop, touched only by that loop). The Driver is
// the one goroutine that advances many guarded wheels: owners publish their
// earliest deadline with Notify (safe from any goroutine), and the driver
// sleeps until the earliest of them and calls Target.Expire, which takes the
// owner's lock. Clocks are safe for concurrent use.
//
// Locked is that owner ready-made, for nodes armed from many goroutines that
// need nothing else under the wheel's lock (the transports' read deadlines):
// a mutex-guarded wheel that notifies the driver of each new earliest
// deadline and fires due nodes after releasing its lock. The engine's shards
// guard their wheels with their own mutex instead.
//
// The package knows nothing of gnet, connections or the engine: what a timer
// means, and which lock guards its wheel, belong to the Target.
package timerwheel
