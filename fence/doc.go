// Package fence hands out fencing tokens: 64-bit values that strictly
// increase with every grant, across all keys, and — when backed by a state
// file — across restarts and crashes, whatever the wall clock does.
//
// # Job
//
// An Allocator is one global counter, or the durable ceiling of a counter
// kept elsewhere (the engine's: Seed, Reserve). Next is one atomic add
// (plus one atomic load), Reserve one atomic load, while the counter is
// below the ceiling already durable on disk. A background persister re-reserves the next window of W values
// (default 2^20) when the counter crosses ceiling − W/2, so a grant waits
// for the disk only when a burst outruns the persister (counted as a
// stall). No value ≥ the durable ceiling is ever issued, so the next
// incarnation, which seeds at that ceiling, starts strictly above
// everything this one handed out.
//
// The state file is byte-compatible with dflockd's --fence-state-file
// (spec §C.3–C.5): sizes 0, 8 (legacy big-endian ceiling) and 32/64 (a
// two-slot journal of checksummed records); operators can roll back to
// dflockd and forward again. Open writes its first record with
// pwrite+fsync, grows the file to 64 bytes and maps it; the persister then
// writes through the MAP_SHARED mapping and msync(MS_SYNC). The file is
// never truncated (a mapping past EOF raises SIGBUS). State files need
// Linux (file_linux.go); elsewhere Open returns ErrUnsupported.
//
// Token encodes and parses dflockd V2F lock tokens: the fence as 16 hex
// digits followed by 16 hex digits of salt (the engine derives it from the
// fence with a keyed hash), so tokens of one key sort in grant order.
//
// # Concurrency
//
// Allocator is safe for concurrent use; Next never blocks unless it stalls
// as described above. After a persist failure (or Close) Next fails
// forever: a fence that might repeat after a crash is worse than none.
// Token values are plain data. The allocator's only mutex guards the stall
// condition variable and is a leaf lock: nothing else is acquired while it
// is held.
//
// # What it must not know
//
// Nothing about keys, locks, connections, the wire protocol or gnet. It
// does not decide which token layout a client sees (the engine and parse
// do); it only issues fences and formats/parses the V2F token.
package fence
