// Package loop is the gnet side of dflockd-ng: a gnet v2 event handler
// whose connections are transports (conn.go) of protocol sessions
// (package session). A session consumes requests straight out of gnet's
// inbound buffer and runs them to completion against the engine on the
// loop that read them; the replies of one read go out in one write. The
// engine's effects on connections of other loops (grants, timeouts,
// pushes) reach them through per-loop inboxes. The package also drives
// time: one timer driver for the engine's shards, one for the sessions'
// read and write deadlines (a wheel per loop).
//
// Concurrency: each connection's state is confined to its event loop.
// Other goroutines reach a connection only through its loop's inbox
// (conn.Post), which is drained by a task that gnet runs on that loop
// (EventLoop.Execute), or at the end of the loop's current read. No
// gnet.Conn method is called off its loop.
//
// loop knows the wire protocol only through session, and holds no lock
// state of its own.
package loop
