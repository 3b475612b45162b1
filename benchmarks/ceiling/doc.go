// Package ceiling is "the ceiling": a gnet v2 server that frames requests
// exactly as dflockd-ng does and answers each with a fixed reply, without any
// lock logic. Whatever throughput it reaches on a machine is the most a
// gnet-based lock server can reach there with the same load generator; the
// ratio of dflockd-ng to the ceiling tells how much the lock engine costs.
//
// Replies: l and sl → "ok 0123456789abcdef0123456789abcdef <lease>" (the
// lease requested in the argument, else 33); r, sr and ping → "ok"; anything
// else → "error". A line over 256 bytes gets "error" and the connection is
// closed, as in dflockd.
//
// Concurrency: gnet runs OnTraffic on several event loops at once; the
// handler keeps no shared mutable state, and each connection's reply buffer
// is touched only by the loop that owns the connection.
package ceiling
