package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// Pauses of a leader search, between rounds of members that all failed:
// the first is short because an election on loopback takes about a
// second, and they double up to the last, so that a long outage costs a
// dial per member per second rather than a storm of them.
const (
	firstLeaderPause = 50 * time.Millisecond
	maxLeaderPause   = time.Second
)

// leaderSearch is the search of one request (or one dial) for the member
// that takes it, in cluster mode. A member that names the leader in its
// error_not_leader is believed, MaxRedirects times at most; one that
// knows no leader, or a member that cannot be reached (the leader that
// died, while the followers still name it), sends the search on to the
// next member in turn, pausing after every round of failures, until the
// Dialer's LeaderWait has passed since the first failure.
type leaderSearch struct {
	members   []string
	cluster   bool          // failures end in a *NotLeaderError (else the last error as it is)
	redirects int           // named redirects still allowed
	wait      time.Duration // how long failures may go on
	deadline  time.Time     // wait after the first failure; zero before it
	pause     time.Duration // the next pause between rounds
	misses    int           // failures since the last pause
	turn      string        // the member the round stands at: redirects leave it, failures move it on
	named     string        // the last leader a member named
	via       string        // the target the last named redirect chose, until reached
	last      error         // the last failure to connect; nil after a bare not-leader
}

func (d *Dialer) newSearch() *leaderSearch {
	ls := &leaderSearch{members: d.Members, cluster: d.clusterMode(), redirects: d.redirectBudget(), pause: firstLeaderPause}
	if ls.cluster && d.LeaderWait > 0 {
		ls.wait = d.LeaderWait
	}
	return ls
}

// next moves the round on to the member after from (the first one when
// from is none) and returns it.
func (ls *leaderSearch) next(from string) string {
	ls.turn = ls.members[0]
	if i := slices.Index(ls.members, from); i >= 0 {
		ls.turn = ls.members[(i+1)%len(ls.members)]
	}
	return ls.turn
}

// notLeader is where to go after the member at from refused with
// error_not_leader naming leader ("" when it knows none): the named
// leader if it is a member and redirects remain, else (leader unknown)
// the next member. A leader outside the members is never dialled.
//
// A member that names itself is no redirect: raft made it the leader and
// it has not taken over yet (its promotion is still applying), or it is
// handing leadership over. It is asked again after a pause, for as long
// as a leader is waited for. Followed as a redirect, it would use up
// MaxRedirects within a millisecond and fail the request just before the
// new leader serves.
func (ls *leaderSearch) notLeader(ctx context.Context, stop <-chan struct{}, from, leader string) (string, error) {
	switch leader {
	case "":
		ls.last = nil
		if err := ls.miss(ctx, stop); err != nil {
			return "", err
		}
		return ls.next(from), nil
	case from:
		ls.named, ls.last, ls.turn = leader, nil, from
		if err := ls.rest(ctx, stop); err != nil {
			return "", err
		}
		return from, nil
	}
	ls.named = leader
	if !slices.Contains(ls.members, leader) || ls.redirects <= 0 {
		return "", &NotLeaderError{Leader: leader}
	}
	ls.turn, ls.via = from, leader
	return leader, nil
}

// reached records that target answered: a redirect that got there was
// followed, and counts against MaxRedirects. A redirect to a leader that
// could not be reached does not: it is the usual sight of a failover, a
// dead leader that the followers still name.
func (ls *leaderSearch) reached(target string) {
	if ls.via != "" && ls.via == target {
		ls.redirects--
	}
	ls.via = ""
}

// unreachable is where to go after target could not be reached (err):
// the member after it, or, when a member named it as the leader, the
// member after that one, so that every member is asked in turn.
func (ls *leaderSearch) unreachable(ctx context.Context, stop <-chan struct{}, target string, err error) (string, error) {
	ls.last = err
	from := target
	if ls.via == target {
		from = ls.turn
	}
	ls.via = ""
	if err := ls.miss(ctx, stop); err != nil {
		return "", err
	}
	return ls.next(from), nil
}

// miss counts a failure; after a round of them it pauses, or gives up
// once the wait has passed.
func (ls *leaderSearch) miss(ctx context.Context, stop <-chan struct{}) error {
	if ls.deadline.IsZero() {
		ls.deadline = time.Now().Add(ls.wait)
	}
	if ls.misses++; ls.misses < len(ls.members) {
		return nil
	}
	return ls.rest(ctx, stop)
}

// rest ends a round of failures: it pauses, or gives up once the wait
// (counted from the search's first failure) has passed.
func (ls *leaderSearch) rest(ctx context.Context, stop <-chan struct{}) error {
	now := time.Now()
	if ls.deadline.IsZero() {
		ls.deadline = now.Add(ls.wait)
	}
	ls.misses = 0
	left := ls.deadline.Sub(now)
	if left <= 0 {
		return ls.giveUp()
	}
	t := time.NewTimer(min(ls.pause, left))
	defer t.Stop()
	ls.pause = min(2*ls.pause, maxLeaderPause)
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return fmt.Errorf("%w: closed while looking for the cluster's leader", ErrClosed)
	}
}

// giveUp is the error of a search that ran out of time.
func (ls *leaderSearch) giveUp() error {
	switch {
	case ls.last == nil:
		return &NotLeaderError{Leader: ls.named}
	case !ls.cluster:
		return ls.last
	}
	return &NotLeaderError{Leader: ls.named, Err: ls.last}
}

// retryable reports whether a failed dial is worth trying elsewhere: the
// member is down or went away (refused, reset, timed out, EOF), as
// opposed to a refusal that every member would repeat (auth, TLS
// verification, an invalid stable ref).
func retryable(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrClosed)
}

// search dials a session, starting at target and going where ls leads
// while members refuse or cannot be reached. stop, when closed, ends it.
func (c *conn) search(ctx context.Context, target string, ls *leaderSearch, stop <-chan struct{}) (*session, error) {
	for {
		s, err := c.d.dialSession(ctx, c, target)
		if err == nil {
			ls.reached(target)
			return s, nil
		}
		var nl *NotLeaderError
		switch {
		case ctx.Err() != nil:
			return nil, err
		case errors.As(err, &nl): // a follower refused the stable ref
			ls.reached(target)
			target, err = ls.notLeader(ctx, stop, target, nl.Leader)
		case retryable(err):
			target, err = ls.unreachable(ctx, stop, target, err)
		}
		if err != nil {
			return nil, err
		}
	}
}

// move replaces the session old, whose member refused a request with
// error_not_leader, by one at target or wherever the search leads from
// there. When a concurrent request has moved the connection already
// there is nothing to do. While the search goes on, old may end (a
// deposed leader closes its connections after refusing their requests)
// without ending the connection; if the search fails, it ends then.
func (c *conn) move(ctx context.Context, old *session, target string, ls *leaderSearch) error {
	select {
	case c.moving <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.err()
	}
	defer func() { <-c.moving }()
	c.mu.Lock()
	if c.mu.err != nil || c.mu.sess != old {
		err := c.mu.err
		c.mu.Unlock()
		return err
	}
	c.mu.replacing = old
	c.mu.Unlock()

	ns, err := c.search(ctx, target, ls, c.done)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.replacing = nil
	switch {
	case c.mu.err != nil:
		if ns != nil {
			ns.fail(c.mu.err)
		}
		return c.mu.err
	case err != nil:
		if oldErr := old.err(); oldErr != nil {
			c.endLocked(oldErr) // what sessionEnded left undone
		}
		return err
	}
	c.installLocked(ns)
	old.retire()
	return nil
}
