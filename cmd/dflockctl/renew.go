package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// minRenewEvery keeps a tiny lease from turning renewal into a busy loop.
const minRenewEvery = 50 * time.Millisecond

// renewer is the part of *client.Client the keeper needs; tests fake it.
type renewer interface {
	Renew(ctx context.Context, key, token string, lease int) (int, error)
}

// renewEvery is how often a lease of lease seconds is renewed: three times
// per lease, so one delayed or lost round trip does not lose the lock, and
// at least every keepalive (if > 0), because the server closes a connection
// that sends nothing for its read timeout (23 s by default) whatever the
// lease. A renewal serves as that keepalive on every server version, where
// ping does not exist before v1.14.
func renewEvery(lease int, keepalive time.Duration) time.Duration {
	d := time.Duration(lease) * time.Second / 3
	if keepalive > 0 && keepalive < d {
		d = keepalive
	}
	return max(d, minRenewEvery)
}

// keepLease renews key's lease every interval until ctx is done (→ nil)
// or a renewal fails (→ that error: the lease is lost or the connection
// is gone, which releases the lock on the server too). The lease is
// always sent explicitly: a renew without one would get the server's
// default rather than the lease we were granted.
//
// With rides (a cluster), a renewal that could not reach the leader (its
// connection broke in a failover, or no leader could be found) is not a
// loss: the cluster keeps the hold until its lease ends. It is retried,
// on a new connection (holding), until one succeeds, the server refuses
// one (refused: the hold is gone), or the lease would have run out,
// counted from when the last successful renewal was sent (the grant's
// arrival at first): then the lock may be someone else's, and that is
// reported.
//
// A renewal in flight when ctx ends is completed rather than abandoned:
// abandoning it would break the connection the final release needs.
func keepLease(ctx context.Context, r renewer, key string, gr grant, every time.Duration, rides bool) error {
	lease := time.Duration(gr.lease) * time.Second
	expires := gr.at.Add(lease)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		sent, err := renewBy(ctx, r, key, gr, expires)
		for pause := minRetryPause; err != nil && rides && !refused(err); pause = min(2*pause, maxRetryPause) {
			left := time.Until(expires)
			if left <= 0 {
				return fmt.Errorf("the lease ran out before a renewal reached the cluster's leader (last: %w)", err)
			}
			wait := time.NewTimer(min(pause, left))
			select {
			case <-ctx.Done():
				wait.Stop()
				return nil // the command ended: the release has the last word
			case <-wait.C:
			}
			sent, err = renewBy(ctx, r, key, gr, expires)
		}
		if err != nil {
			return err
		}
		expires = sent.Add(lease)
	}
}

// Pauses between renewals retried in a failover: an election takes about
// a second; beyond that, one try a second is enough.
const (
	minRetryPause = 50 * time.Millisecond
	maxRetryPause = time.Second
)

// renewBy sends one renewal, bounded by the lease's end, and returns
// when it was sent.
func renewBy(ctx context.Context, r renewer, key string, gr grant, expires time.Time) (time.Time, error) {
	sent := time.Now()
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), expires)
	defer cancel()
	_, err := r.Renew(rctx, key, gr.token, gr.lease)
	return sent, err
}

// refused reports whether a renewal's error is the server's answer that
// the hold is gone (its lease ran out, its token is unknown, another
// holds the key; or auth was refused), rather than a failure to ask it
// (the connection broke, no leader could be reached, the member drains).
func refused(err error) bool {
	if errors.Is(err, client.ErrNotLeader) || errors.Is(err, client.ErrDraining) {
		return false
	}
	return errors.Is(err, client.ErrServer) || errors.Is(err, client.ErrLeaseExpired) ||
		errors.Is(err, client.ErrAuth) || errors.Is(err, client.ErrInvalid)
}
