package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// errRecovering answers the election RPCs of a member whose log is
// recovering from damage. (Its text must not contain raft's "unexpected
// command", which raft takes for a peer too old for pre-vote and counts
// as a granted pre-vote.)
var errRecovering = errors.New("cluster: this member is recovering a damaged raft log and does not stand for election")

// voteGuard keeps a member whose log is shorter than what it
// acknowledged before the damage (--raft-recover) from electing a leader
// that lacks those entries, and from standing itself: a vote judged by
// raft against the shortened log could elect a leader that lacks entries
// the member helped commit, and they would be lost cluster-wide. The
// guard lifts once the log reaches the owed index again (markedLog calls
// lift).
//
// It still votes, through raft, for a candidate whose last entry is at
// least as up to date as the owed one (a higher term, or the same term
// and an index no lower): raft's own rule, applied to the log the member
// had acknowledged rather than the one it has. Such a candidate holds
// every entry the member owes (raft's log matching), so this member's
// vote can elect only a leader that has them. Without it, a cluster
// whose majority is recovering could never elect a leader, not even the
// member that holds everything (issue #34). owedTerm must be no lower
// than the owed entry's true term (a higher one only makes the guard
// stricter); 0 means unknown, and then no candidate gets the vote.
type voteGuard struct {
	recovering atomic.Bool
	// owed, owedTerm: the index the log must reach again and the term of
	// the entry there. Fixed while the guard holds.
	owed, owedTerm uint64
}

func newVoteGuard(owed, owedTerm uint64) *voteGuard {
	g := &voteGuard{owed: owed, owedTerm: owedTerm}
	g.recovering.Store(true)
	return g
}

// holdsOwed reports whether a candidate whose last entry is at
// (lastIndex, lastTerm) holds every entry this member owes.
func (g *voteGuard) holdsOwed(lastIndex, lastTerm uint64) bool {
	if g.owedTerm == 0 {
		return false
	}
	return lastTerm > g.owedTerm || lastTerm == g.owedTerm && lastIndex >= g.owed
}

func (g *voteGuard) lift() { g.recovering.Store(false) }

// Recovering reports whether the guard still holds.
func (g *voteGuard) Recovering() bool { return g.recovering.Load() }

// guardedTransport is a raft Transport that, while its guard holds,
// answers incoming RequestVote and RequestPreVote with Granted=false
// before raft sees them unless the candidate holds every owed entry (raft
// then decides as usual), refuses TimeoutNow (a leadership transfer would
// make this member stand), and fails its own vote requests. Everything
// else passes through, AppendEntries and InstallSnapshot included.
type guardedTransport struct {
	raft.Transport
	g        *voteGuard
	consumer chan raft.RPC
	quit     chan struct{}
	once     sync.Once
}

// guardedPreVote is guardedTransport over a transport with pre-vote:
// raft decides whether to pre-vote by the transport's type, so the
// wrapper must offer it exactly when the inner one does.
type guardedPreVote struct {
	*guardedTransport
	pv raft.WithPreVote
}

// guardTransport wraps t with g.
func guardTransport(t raft.Transport, g *voteGuard) raft.Transport {
	gt := &guardedTransport{Transport: t, g: g, consumer: make(chan raft.RPC), quit: make(chan struct{})}
	go gt.filter(t.Consumer())
	if pv, ok := t.(raft.WithPreVote); ok {
		return &guardedPreVote{guardedTransport: gt, pv: pv}
	}
	return gt
}

// filter passes the inner transport's RPCs on to raft, answering the
// election ones of candidates that lack owed entries itself while the
// guard holds. After the guard lifts it
// is one channel hop; a member that never recovered has no filter.
func (t *guardedTransport) filter(in <-chan raft.RPC) {
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-t.quit:
			return
		}
		if t.g.Recovering() {
			switch req := rpc.Command.(type) {
			case *raft.RequestVoteRequest:
				if !t.g.holdsOwed(req.LastLogIndex, req.LastLogTerm) {
					rpc.Respond(&raft.RequestVoteResponse{RPCHeader: t.header(), Term: req.Term, Granted: false}, nil)
					continue
				}
			case *raft.RequestPreVoteRequest:
				if !t.g.holdsOwed(req.LastLogIndex, req.LastLogTerm) {
					rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: t.header(), Term: req.Term, Granted: false}, nil)
					continue
				}
			case *raft.TimeoutNowRequest:
				rpc.Respond(nil, errRecovering)
				continue
			}
		}
		select {
		case t.consumer <- rpc:
		case <-t.quit:
			return
		}
	}
}

// header is the RPC header of the guard's own answers. Raft reads only
// the term and the grant of a vote answer; the address is this member's.
func (t *guardedTransport) header() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, Addr: []byte(t.LocalAddr())}
}

// Consumer implements raft.Transport.
func (t *guardedTransport) Consumer() <-chan raft.RPC { return t.consumer }

// RequestVote implements raft.Transport.
func (t *guardedTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if t.g.Recovering() {
		return errRecovering
	}
	return t.Transport.RequestVote(id, target, args, resp)
}

// RequestPreVote implements raft.WithPreVote.
func (t *guardedPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if t.g.Recovering() {
		return errRecovering
	}
	return t.pv.RequestPreVote(id, target, args, resp)
}

// Close implements raft.WithClose: it ends the filter and closes the
// inner transport.
func (t *guardedTransport) Close() error {
	t.once.Do(func() { close(t.quit) })
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}
