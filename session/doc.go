// Package session is the per-connection protocol of dflockd-ng, over any
// byte stream: a Session owns one client's protocol state (auth, the input
// cursor and framing, a request parked in the engine, ordered replies,
// pushes, the write budget and backpressure, the read and write
// deadlines) and talks to its connection only through a Transport — a
// gnet connection (package loop), a test fake, and whatever front-end
// comes next (TLS, HTTP sessions) reuse it unchanged. What does not
// change over a connection's life (its peer's address, whether the
// transport keeps a half-closed connection open) it is told once, as it
// opens (Hub.Open, Peer). The dflockd line
// protocol (in its v1, v2 and rf profiles) and the godistlock protocol are
// two codecs of it.
//
// A Hub ties the sessions of one engine together: it opens them, and
// routes the engine's effects (grants to parked requests, timeouts,
// pushes) to the sessions they name, after the engine's locks are
// released.
//
// One request, in each mode. The hub's applier is chosen once, when the
// hub is made (applier.go); the session never asks which it has.
//
//	single node (NewHub, local.go)        cluster member (NewClusterHub, replicated.go)
//	transport reads bytes → Session.Input → codec parses a frame → exec
//	exec → applier.apply(cmd)
//	  engine.Apply, effects routed          Replica.Submit: the batcher proposes it
//	  answer now → reply written             → owed (s.owed.Reserve), parsing goes on
//	  or it waits → owed, parsing stops          up to maxOwed
//	                                         entry applies: cluster.FSM runs it in the
//	                                         replica's engine; Hub.Deliver → Post
//	late answer: an engine effect → Hub.Route → transport Post → Session.Deliver
//	  → deliverOwed writes it (owed.go); parsing resumes once nothing is owed
//
// What the two modes decide differently is the applier's to say: how far
// a session parses ahead of what it is owed (applier.pipelined: a single
// node stops behind a request that waits, as dflockd's reader does, spec
// §A.6; a member pipelines, its log keeping each connection's requests in
// order and the engine running those that reached it behind a wait after
// that one ends, engine/queue.go), and so what input piling up and a peer's half-close mean
// (owed.go). HTTP sessions are Endpoints on the same applier (Hub.Call).
// A godistlock session hands its lock commands to the same applier and
// parks each ON that waits under a tag (godistlock_owed.go).
//
// Owed answers, whichever the protocol, are kept in request order by one
// sequencer, internal/owed's Queue: a place reserved when a request is
// owed its answer, filled when the answer comes (the applier answers in
// the order of the requests), leaving in order. A session holds one
// (s.owed) for either codec; httpapi's sessions hold one each for their
// callers. An answer a session could give at once while others are owed
// does not overtake them: the line protocol parses its frame again once
// they are written (retry); godistlock answers by nonce, so what it
// answers itself (HELLO, STATS, a refusal) goes out at once.
//
// Concurrency: a Session's methods are called on its transport's
// goroutine, one at a time, except Backlogged; other goroutines reach a
// session only through Hub.Route, which hands results to the transport's
// Post. A Hub is safe for concurrent use.
//
// session knows the wire format through parse and the semantics through
// engine; it knows nothing of gnet or sockets.
package session
