// Package loop is the network side of dflockd-ng: a gnet v2 event handler
// that frames requests straight out of gnet's inbound buffer, runs them to
// completion against the engine on the loop that read them, batches the
// replies of one read into one write, and delivers events (grants,
// timeouts) to connections owned by other loops through per-loop inboxes.
//
// Concurrency: each connection's state is confined to its event loop.
// Other goroutines reach a connection only through its loop's inbox, which
// is drained by a task that gnet runs on that loop (EventLoop.Execute).
// The only gnet.Conn methods called off-loop are none: everything,
// including the drain, runs on the owning loop.
//
// loop knows the wire format only through parse and the semantics only
// through engine; it holds no lock state of its own.
package loop
