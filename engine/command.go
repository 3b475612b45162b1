package engine

import (
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// SessionID names a client session: a connection of any transport, or an
// HTTP session. The engine assigns it when the session opens (KindOpen);
// 0 names no session. An id is never reused while its session lives.
type SessionID uint64

// Kind says what a Command asks of the engine.
type Kind uint8

const (
	// KindRequest is a dflockd protocol request, in Req.
	KindRequest Kind = iota
	// KindOpen opens a session; the Result carries its id. ConnID, if
	// not 0, is the number stats show as its owner_conn_id.
	KindOpen
	// KindClose runs a session's disconnect cleanup (spec §D.4) and
	// forgets it. With Keep, its held slots stay until their leases end
	// whatever Config.KeepOnDisconnect says (a cluster's new leader
	// forgets the previous leader's connections this way: a failover must
	// not revoke locks en masse).
	KindClose
	// KindGC prunes keys idle for --gc-max-idle (spec §D.6).
	KindGC
	// KindDrain starts a graceful drain (spec §D.5): parked requests end
	// with error, and so does every request that would wait from now on.
	KindDrain
	// KindAdvance moves time to At: every timer due by then fires, in a
	// fixed order (advance.go). The same as Advance.
	KindAdvance
	// The lock operations of foreign protocols (foreign.go): Req.Key is
	// the lock, LeaseMs its lease in milliseconds (0 = the default).
	KindTaggedAcquire // Tag, Wait
	KindOwnRelease
	KindFenceRenew // Fence
	KindHolder
	// KindCancel withdraws the session's parked request (its caller gave
	// up, e.g. an HTTP client went away): with Tag 0 the one parked
	// l/sl/rl/wl/elect, w/sw/rw/ww, blpop/brpop or bwait, else the parked
	// tagged acquire with that Tag. The request ends with no delivery, as
	// if it had never been made (a w's enqueue state is consumed, as by a
	// timeout). Result.Int is 1 if a parked request was withdrawn, 0 if
	// none was: its delivery may then already be on its way.
	KindCancel
	// KindForceRelease is an operator's release of Req.Key's holder with
	// Fence (0: every holder) in the namespace of Req.Op (OpRelease: the
	// lock space, read-write locks included; OpSemRelease: semaphores).
	// Req.Value says who asked, for the event ring. Result.Int is how
	// many holders were released (forcerelease.go).
	KindForceRelease
	// KindDetach parts a session from its connection, which went away,
	// while the session stays (a cluster's orphan, spec §G: its holds and
	// waits stay for a connection that takes it over): the requests the
	// connection sent behind its wait are dropped, as a close drops
	// them, and that wait holds back nothing the next connection sends
	// (queue.go).
	KindDetach
)

// Command is one input to the engine: everything Apply needs, so that the
// same commands applied to two engines in the same order make the same
// decisions. Its byte slices (in Req) belong to the command for the
// duration of Apply and are never retained: the engine copies what it
// keeps. They must not alias a transport's read buffer if the command
// outlives the read (a replicated or recorded log).
type Command struct {
	Kind    Kind
	Session SessionID
	// At is when the command happens: deadlines it sets start here
	// (rounded up, timerwheel.Instant.After) and expiry checks use it.
	// Times of one engine's commands must not go backwards.
	At  timerwheel.Instant
	Req vocab.Request

	ConnID  uint64 // KindOpen
	Keep    bool   // KindClose: keep held slots until their leases end
	Tag     uint32 // KindTaggedAcquire: the caller's name for a parked acquire
	Wait    bool   // KindTaggedAcquire: park when taken (else answer timeout)
	Fence   uint64 // KindFenceRenew
	LeaseMs int64  // the foreign kinds: lease in milliseconds, 0 = default
	// Readopt (KindRequest, an acquire): if the session already holds or
	// waits on the key, the acquire takes that claim back instead of
	// queueing behind it — the held token, or the place in the FIFO. A
	// cluster sets it for a connection that took over an orphaned
	// session by its stable-ref (spec §G).
	Readopt bool
}

// Result is the outcome of a command, or a late reply or push delivered
// to a session as an Effect.
type Result struct {
	Status vocab.Status
	Kind   ResultKind
	Token  fence.Token
	Lease  int64  // seconds, for grants; the TTL for renewals
	Int    int64  // KindInt
	Value  string // KindValue; immutable, usable after Apply returns
	// Items is an lrange's slice of the list (KindList), or the fences a
	// force release released (KindInt: Int of them, in decimal); the
	// strings are immutable, the slice is the caller's.
	Items []string
	Push  Push // KindPush
	// Blocked: no reply yet; exactly one Result for this request will
	// reach the session as an Effect.
	Blocked bool
	// Tag is the caller's tag of a tagged acquire, copied into its
	// delivery so that a session with several parked acquires can tell
	// them apart; 0 for every other request.
	Tag uint32
	// Session is the id of a session KindOpen opened.
	Session SessionID
}

// ResultKind tells the caller how to encode a Result.
type ResultKind uint8

const (
	KindStatus ResultKind = iota // bare status word
	KindGrant                    // "<status> <token> <lease>"
	KindRenew                    // "ok <remaining>"
	KindInt                      // "ok <integer>"
	KindValue                    // "ok <value>"
	KindList                     // "ok <JSON array of Items>"
	KindStats                    // "ok <stats document>": the caller builds it
	// KindReceivers is signal's "ok <n>": n is how many of the command's
	// push effects the caller's delivery made (spec §B.9; see Effect).
	KindReceivers
	// KindPush is an asynchronous line (Push) for a subscriber; it
	// answers no request and unblocks nothing.
	KindPush
	// KindGone is no reply: a cluster tells a connection whose peer went
	// away that its close has applied, so nothing more will come for it
	// (session.Session.PeerClosed). The engine never makes one.
	KindGone
	// KindAnswer marks the answer of a foreign command (foreign.go) that
	// a cluster applied from its log: that session is owed one for each
	// command, a wait's (Blocked) included, and tells them from the late
	// grants of its waits, which also carry tags, by this mark (the
	// godistlock codec ignores the kind otherwise). The engine never
	// makes one.
	KindAnswer
	// KindStableRef answers a stable-ref request (ok) that reached the
	// engine: Value is the ref, which the caller records for the
	// session before passing the answer on as a bare status (a cluster
	// keeps it for its orphans, spec §G). Given in the request's turn,
	// so after what the session sent before it.
	KindStableRef
)

// Push is the content of an asynchronous line; parse.AppendPush encodes it.
type Push struct {
	Kind vocab.PushKind
	// A and B are its two fields: channel and payload of a signal, event
	// and key of a watch, event and name of a leader push.
	A, B string
}

// status is a bare-status Result.
func status(s vocab.Status) Result { return Result{Status: s} }

func pushResult(kind vocab.PushKind, a, b string) Result {
	return Result{Status: vocab.StatusOK, Kind: KindPush, Push: Push{Kind: kind, A: a, B: b}}
}
