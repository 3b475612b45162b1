// Package session is the per-connection protocol of dflockd-ng, over any
// byte stream: a Session owns one client's protocol state (auth, the input
// cursor and framing, a request parked in the engine, ordered replies,
// pushes, the write budget and backpressure, the read and write
// deadlines) and talks to its connection only through a Transport — a
// gnet connection (package loop), a test fake, and whatever front-end
// comes next (TLS, HTTP sessions) reuse it unchanged. The dflockd line
// protocol (in its v1, v2 and rf profiles) and the godistlock protocol are
// two codecs of it.
//
// A Hub ties the sessions of one engine together: it opens them, and
// routes the engine's effects (grants to parked requests, timeouts,
// pushes) to the sessions they name, after the engine's locks are
// released.
//
// Concurrency: a Session's methods are called on its transport's
// goroutine, one at a time, except Backlogged; other goroutines reach a
// session only through Hub.Route, which hands results to the transport's
// Post. A Hub is safe for concurrent use.
//
// session knows the wire format through parse and the semantics through
// engine; it knows nothing of gnet or sockets.
package session
