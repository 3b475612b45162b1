// Package client speaks dflockd's line protocol over one TCP connection:
// every request is three LF-terminated lines (command, key, argument) and
// every reply one line. It implements what dflockctl needs: auth, l (lock),
// n (renew), r (release), ping and stats.
//
// Concurrency: a Client may be used from several goroutines. Each request
// holds the client's mutex from the first byte written to the reply read, so
// a renewal goroutine and the main flow never interleave frames and each
// reply is matched to its own request. A blocking l therefore delays other
// requests on the same Client until it returns.
//
// After any I/O failure or a cancelled request the connection's framing can
// no longer be trusted, so the Client closes it and fails every later request
// with an error matching ErrBroken.
//
// The package knows nothing about command lines, environment variables or
// what the caller does while it holds a lock.
package client
