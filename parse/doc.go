// Package parse is dflockd's wire format in both directions: it splits the
// inbound byte stream into 3-line request frames, turns each frame into a
// typed Request, and appends reply lines to an output buffer.
//
// Concurrency: parse holds no state and does no I/O; every function is safe
// to call from any goroutine.
//
// Borrowed bytes: Frame and Request fields that are []byte alias the input
// buffer handed to Next. They stay valid only as long as that buffer does;
// for a gnet connection that is until the next Discard or the return from
// OnTraffic, whichever comes first. Anything that must outlive the request
// (a key stored in a map, a value) has to be copied by the caller.
//
// Parse knows nothing of locks, connections or gnet: the engine gives
// meaning to a Request and the loop decides what to do with an error.
package parse
