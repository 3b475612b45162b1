package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func newInmemTransport() *raft.InmemTransport {
	_, t := raft.NewInmemTransportWithTimeout("", time.Second)
	return t
}

// guardPair is a guarded transport (a recovering member) and a plain
// peer, connected both ways.
func guardPair(t *testing.T) (g *voteGuard, guarded raft.Transport, peer *raft.InmemTransport, inner *raft.InmemTransport) {
	t.Helper()
	inner, peer = newInmemTransport(), newInmemTransport()
	inner.Connect(peer.LocalAddr(), peer)
	peer.Connect(inner.LocalAddr(), inner)
	g = &voteGuard{}
	g.recovering.Store(true)
	guarded = guardTransport(inner, g)
	t.Cleanup(func() {
		guarded.(raft.WithClose).Close()
		peer.Close()
	})
	return g, guarded, peer, inner
}

// serve answers every RPC that reaches raft's side of tr (the consumer)
// with a grant, counting them.
func serve(tr raft.Transport, got chan<- any) {
	for rpc := range tr.Consumer() {
		got <- rpc.Command
		switch req := rpc.Command.(type) {
		case *raft.RequestVoteRequest:
			rpc.Respond(&raft.RequestVoteResponse{Term: req.Term, Granted: true}, nil)
		case *raft.RequestPreVoteRequest:
			rpc.Respond(&raft.RequestPreVoteResponse{Term: req.Term, Granted: true}, nil)
		case *raft.AppendEntriesRequest:
			rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, Success: true}, nil)
		default:
			rpc.Respond(nil, errors.New("unexpected"))
		}
	}
}

func TestVoteGuard(t *testing.T) {
	g, guarded, peer, inner := guardPair(t)
	if _, ok := guarded.(raft.WithPreVote); !ok {
		t.Fatal("the guarded transport hides the inner one's pre-vote")
	}
	reached := make(chan any, 16)
	go serve(guarded, reached)
	to := inner.LocalAddr()

	var vote raft.RequestVoteResponse
	if err := peer.RequestVote("n1", to, &raft.RequestVoteRequest{Term: 7}, &vote); err != nil || vote.Granted || vote.Term != 7 {
		t.Fatalf("vote asked of a recovering member: %+v %v, want refused in term 7", vote, err)
	}
	var pre raft.RequestPreVoteResponse
	if err := peer.RequestPreVote("n1", to, &raft.RequestPreVoteRequest{Term: 8}, &pre); err != nil || pre.Granted || pre.Term != 8 {
		t.Fatalf("pre-vote asked of a recovering member: %+v %v, want refused in term 8", pre, err)
	}
	var tn raft.TimeoutNowResponse
	if err := peer.TimeoutNow("n1", to, &raft.TimeoutNowRequest{}, &tn); err == nil {
		t.Fatal("a recovering member accepted a leadership transfer")
	}
	// Replication still reaches it.
	var ae raft.AppendEntriesResponse
	if err := peer.AppendEntries("n1", to, &raft.AppendEntriesRequest{Term: 8}, &ae); err != nil || !ae.Success {
		t.Fatalf("append entries: %+v %v", ae, err)
	}
	if c := <-reached; func() bool { _, ok := c.(*raft.AppendEntriesRequest); return !ok }() {
		t.Fatalf("raft saw %T first; the election RPCs must not reach it", c)
	}
	// Its own campaign fails.
	if err := guarded.RequestVote("n2", peer.LocalAddr(), &raft.RequestVoteRequest{Term: 9}, &vote); !errors.Is(err, errRecovering) {
		t.Fatalf("a recovering member's vote request: %v", err)
	}
	if err := guarded.(raft.WithPreVote).RequestPreVote("n2", peer.LocalAddr(), &raft.RequestPreVoteRequest{Term: 9}, &pre); !errors.Is(err, errRecovering) {
		t.Fatalf("a recovering member's pre-vote request: %v", err)
	}

	g.lift()
	if err := peer.RequestVote("n1", to, &raft.RequestVoteRequest{Term: 10}, &vote); err != nil || !vote.Granted {
		t.Fatalf("vote after the guard lifted: %+v %v", vote, err)
	}
	if c := <-reached; func() bool { _, ok := c.(*raft.RequestVoteRequest); return !ok }() {
		t.Fatalf("raft saw %T, want the vote request", c)
	}
	go serve(peer, make(chan any, 16))
	if err := guarded.RequestVote("n2", peer.LocalAddr(), &raft.RequestVoteRequest{Term: 11}, &vote); err != nil || !vote.Granted {
		t.Fatalf("own vote request after the guard lifted: %+v %v", vote, err)
	}
}

// TestVoteGuardVotesForCandidateHoldingOwed is issue #34's first case in
// the small: a recovering member that owes entries up to index 100 of
// term 3 lets raft judge the election requests of a candidate whose last
// entry is at least that up to date, and answers the others itself; it
// still stands for nothing itself.
func TestVoteGuardVotesForCandidateHoldingOwed(t *testing.T) {
	inner, peer := newInmemTransport(), newInmemTransport()
	inner.Connect(peer.LocalAddr(), peer)
	peer.Connect(inner.LocalAddr(), inner)
	guarded := guardTransport(inner, newVoteGuard(100, 3))
	t.Cleanup(func() {
		guarded.(raft.WithClose).Close()
		peer.Close()
	})
	reached := make(chan any, 16)
	go serve(guarded, reached)
	to := inner.LocalAddr()
	for _, c := range []struct {
		index, term uint64
		holds       bool
	}{
		{99, 3, false},  // the owed term, short of the owed index
		{150, 2, false}, // longer, but its tail is of an older term
		{0, 0, false},
		{100, 3, true},
		{120, 3, true},
		{50, 4, true}, // a later term: its leader had every committed entry
	} {
		var vote raft.RequestVoteResponse
		err := peer.RequestVote("n1", to, &raft.RequestVoteRequest{Term: 9, LastLogIndex: c.index, LastLogTerm: c.term}, &vote)
		if err != nil || vote.Granted != c.holds {
			t.Fatalf("vote for a candidate at index %d term %d: %+v %v, want granted %v", c.index, c.term, vote, err, c.holds)
		}
		var pre raft.RequestPreVoteResponse
		err = peer.RequestPreVote("n1", to, &raft.RequestPreVoteRequest{Term: 9, LastLogIndex: c.index, LastLogTerm: c.term}, &pre)
		if err != nil || pre.Granted != c.holds {
			t.Fatalf("pre-vote for a candidate at index %d term %d: %+v %v, want granted %v", c.index, c.term, pre, err, c.holds)
		}
		if c.holds { // raft (serve) answered both
			for _, want := range []string{"*raft.RequestVoteRequest", "*raft.RequestPreVoteRequest"} {
				if got := fmt.Sprintf("%T", <-reached); got != want {
					t.Fatalf("raft saw %s, want %s", got, want)
				}
			}
		}
	}
	if len(reached) != 0 {
		t.Fatalf("raft saw %T from a candidate that lacks owed entries", <-reached)
	}
	var tn raft.TimeoutNowResponse
	if err := peer.TimeoutNow("n1", to, &raft.TimeoutNowRequest{}, &tn); err == nil {
		t.Fatal("a recovering member accepted a leadership transfer")
	}
	var vote raft.RequestVoteResponse
	if err := guarded.RequestVote("n2", peer.LocalAddr(), &raft.RequestVoteRequest{Term: 9, LastLogIndex: 200, LastLogTerm: 5}, &vote); !errors.Is(err, errRecovering) {
		t.Fatalf("a recovering member's vote request: %v", err)
	}

	// The owed term unknown: no candidate gets the vote.
	unknown := newVoteGuard(100, 0)
	if unknown.holdsOwed(1000, 99) {
		t.Fatal("a guard that does not know the owed term let a candidate through")
	}
}
