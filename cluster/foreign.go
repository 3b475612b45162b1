package cluster

import (
	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// foreign applies a foreign protocol's lock command (OpForeign) of a
// connection. Such a connection (godistlock) answers by nonce and lets
// its acquires wait side by side, so unlike a dflockd request a tagged
// acquire that waits holds nothing back (the engine queues requests only
// behind a KindRequest's wait, engine/queue.go): what the connection
// sends next applies at once. Its
// answer is delivered even when it waits (Blocked), and the grant later
// carries its Tag (session/godistlock.go matches both).
func (f *FSM) foreign(op *Op, now timerwheel.Instant) {
	fo := &op.Foreign
	sid := f.session(op.Conn, now)
	f.run(op.Conn, &engine.Command{Kind: fo.Kind, Session: sid, At: now, Req: vocab.Request{Key: fo.Key},
		Tag: fo.Tag, Wait: fo.Wait, Fence: fo.Fence, LeaseMs: fo.LeaseMs})
}

// SubmitForeign proposes a foreign protocol's lock command of local
// connection conn (engine/foreign.go: c's Kind, Req.Key, Tag, Wait, Fence
// and LeaseMs; its Session and At are the log's to choose). Its result
// reaches the Output when the entry applies, Blocked for an acquire that
// waits, whose grant follows as an effect with its Tag; or Demoted says
// it never will. Submit copies what it needs of c.
func (n *Node) SubmitForeign(conn uint32, c *engine.Command) error {
	if !foreignKind(c.Kind) {
		panic("cluster: SubmitForeign of a command kind the log does not carry")
	}
	return n.enqueue(&Op{Kind: OpForeign, Foreign: Foreign{Kind: c.Kind, Key: c.Req.Key, Tag: c.Tag, Wait: c.Wait,
		Fence: c.Fence, LeaseMs: c.LeaseMs}}, conn)
}

// ForceRelease proposes an operator's release (engine.KindForceRelease:
// c's Req.Op, Req.Key, Req.Value and Fence) on behalf of local connection
// conn, which its answer reaches (ok, Int the holders released) when the
// entry applies; or Demoted says it never will.
func (n *Node) ForceRelease(conn uint32, c *engine.Command) error {
	return n.enqueue(&Op{Kind: OpForceRelease, Release: ForceRelease{Semaphore: c.Req.Op == vocab.OpSemRelease,
		Key: c.Req.Key, Fence: c.Fence, Who: c.Req.Value}}, conn)
}
