// Package fakedflockd is a small in-memory dflockd for dflockctl's tests:
// one goroutine per connection, auth, l/r/n with strict per-key FIFO and
// leases, ping, stats, and the per-line read timeout. It exists so the
// client and CLI tests do not depend on the real server, which lives
// elsewhere in this module; those tests can later run against it too.
//
// It is deliberately simple (one mutex, timers per lease) and records every
// request so tests can assert what the client sent. Test hooks (Revoke,
// Holder, Requests) are safe to call from any goroutine.
package fakedflockd
