package session

import (
	"net"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Transport is what a Session needs of its connection. Every method but
// Post is called on the session's goroutine, the one that calls the
// session's methods.
type Transport interface {
	// Write queues b for the peer; the transport copies what it keeps.
	Write(b []byte)
	// Unsent reports the bytes written but not yet taken by the peer's
	// socket (the transport's output buffer).
	Unsent() int
	// Close closes the connection, asynchronously, after trying to send
	// what is queued; the transport then calls Session.Closed.
	Close()
	// Wake asks for Session.Input to be called again soon with whatever
	// input is buffered, even if no new bytes arrive.
	Wake()
	// Yield reports whether the transport's goroutine has work piling up
	// (pushes for other sessions, PushBudget bytes and more): Input then
	// stops early and Wakes, so that a pipelined burst of signals reaches
	// its receivers in slices.
	Yield() bool
	// PauseRead stops reading from the peer, so that flow control holds
	// it back (backpressure); false if the transport cannot.
	// ResumeRead reads again. A transport may resume by itself once its
	// output has drained.
	PauseRead() bool
	ResumeRead()
	// SetTimer asks for Session.Timer to be called at or after at; a new
	// call replaces the previous one.
	SetTimer(at timerwheel.Tick)
	// Scratch is working memory the session may use during one call of
	// its methods, never keep: the transport's goroutine owns it.
	Scratch() *Scratch
	// Post queues a late result or a push for the session, from any
	// goroutine, without blocking; the transport then calls
	// Session.Deliver on the session's goroutine.
	Post(r engine.Result)
}

// Peer is what a session learns of its connection once, as it opens
// (Hub.Open): facts that do not change, so the session never asks its
// transport for them again.
type Peer struct {
	// Addr is the peer's address: the block whose failed auths slow the
	// connection's (authgate.go), and the logs' "remote".
	Addr net.Addr
	// HalfOpen tells that the transport, reading its peer's EOF, asks
	// PeerClosed before closing, and so may keep the connection open to
	// write what the session is owed (netconn; gnet's loops on a cluster
	// member, which write it to a duplicate of the socket). One that
	// closes at once (gnet's loops on a single node) reports instead a
	// half-close it sees while reading is paused (PauseRead) through
	// PeerClosed: a session owed answers it must still write then stops
	// reading until they are written.
	HalfOpen bool
}

// Scratch is per-goroutine working memory of a transport.
type Scratch struct {
	Out  []byte         // replies of one read, written at once
	Args []byte         // the arguments of commands, copied out of the read buffer
	Fx   engine.Effects // effects of one command, routed at once
	// Cmd is the command being applied: in the scratch, not on the
	// stack, since the applier is an interface and what goes through one
	// by pointer would be moved to the heap for every request.
	Cmd engine.Command
	// Res is the Result of Cmd, in the scratch for the same reason.
	Res engine.Result
	// Counters, if set, counts this goroutine's requests for /metrics
	// (counters.go).
	Counters *Counters
	// answered are the commands of the requests answered in the read
	// being served, whose latency Input observes at its end (latency.go).
	answered answered
}

// What a Scratch keeps between uses: enough for the replies of a full
// read and the effects of a busy hand-off. A rare large use (a stats
// document of thousands of keys, a signal to thousands of receivers)
// allocates its buffer and lets it go afterwards, so a loop's memory
// does not stay at its peak for the life of the process.
const (
	keepOut  = 64 << 10
	keepArgs = 16 << 10
	keepFx   = 1024
)

// Trim drops buffers a rare large use grew past what is worth keeping.
// Transports call it between events, when nothing refers to them.
func (sc *Scratch) Trim() {
	if cap(sc.Out) > keepOut {
		sc.Out = make([]byte, 0, 4096)
	}
	if cap(sc.Args) > keepArgs {
		sc.Args = nil
	}
	if cap(sc.Fx.List) > keepFx {
		sc.Fx.List = nil
	}
}
