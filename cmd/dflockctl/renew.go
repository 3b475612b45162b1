package main

import (
	"context"
	"time"
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
// A renewal in flight when ctx ends is completed rather than abandoned:
// abandoning it would break the connection the final release needs.
func keepLease(ctx context.Context, r renewer, key, token string, lease int, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := r.Renew(context.WithoutCancel(ctx), key, token, lease); err != nil {
			return err
		}
	}
}
