// Package netconn serves protocol sessions (package session) over
// net.Conn connections: the TLS listener of dflockd-ng, since gnet has no
// TLS, and plain TCP through the same code where a net.Listener is what
// there is. Each accepted connection is a session.Transport of the same
// Hub the gnet loops serve, so a TLS client shares locks, FIFOs, pushes
// and stats with every other client.
//
// A connection is two goroutines at most:
//   - the owner (owner.go) runs the TLS handshake, then reads the socket
//     (reader.go) and runs every Session method but Backlogged, one at a
//     time: input, deliveries posted by other goroutines, the session's
//     timer. Other goroutines get it out of a blocked Read by setting the
//     read deadline in the past (a kick). While the session pauses
//     reading (backpressure) the owner reads nothing, and TCP flow
//     control holds the client back;
//   - the writer (writer.go) sends the owner's queued output, one Write
//     per batch, and closes the socket; it runs only while there is
//     output, so an idle connection is its owner alone, parked in Read.
//
// An idle TLS connection costs about 21 KiB of resident memory: the
// owner's stack (8 KiB), crypto/tls's state of the connection (its record
// buffers, the AEADs) and the session's.
//
// Time goes through timer wheels (timers.go) driven by one
// timerwheel.Driver on the hub's clock: the sessions' deadlines, the
// handshake deadline and the linger of a closing connection. No
// connection has a time.Timer of its own. The connections of a timer
// shard also share request counters (Config.Count) and a read count,
// which tells the quiet releaser (release.go) when to hand the free heap
// back to the OS.
//
// Concurrency: other goroutines reach a connection only through Post (a
// queue, then a kick or a token on the owner's signal channel) and
// through closing its socket (handshake timeout, Shutdown). Lock order:
// Server.mu, then conn.mu (Shutdown closing what is left); a timer
// shard's mutex, then none; conn.mu and conn.out.mu are leaves and never
// held together.
//
// netconn knows the wire protocol only through session, and nothing of
// gnet.
package netconn
