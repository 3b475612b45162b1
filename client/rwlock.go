package client

import (
	"strconv"
	"time"
)

// Read-write locks (redis-feats servers and dflockd-ng): readers share the
// key, a writer holds it alone, and waiters are served in order with no
// reader barging past a queued writer. A key used as a plain lock or
// semaphore cannot be used as a read-write lock (ErrTypeMismatch).

// RLock sends rl: it waits up to timeout for a read (shared) hold of key.
func RLock(c *Conn, key string, timeout time.Duration, opts ...Option) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, readFamily.acquire, key, acquireArg(timeout, 0, collect(opts)))
	return g.token, g.lease, g.fence, err
}

// WLock sends wl: it waits up to timeout for the write (exclusive) hold.
func WLock(c *Conn, key string, timeout time.Duration, opts ...Option) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, writeFamily.acquire, key, acquireArg(timeout, 0, collect(opts)))
	return g.token, g.lease, g.fence, err
}

// RUnlock sends rr. The server does not check the side: RUnlock and
// WUnlock release either kind of hold.
func RUnlock(c *Conn, key, token string) error {
	return release(c, readFamily.release, key, token)
}

// WUnlock sends wr; see RUnlock.
func WUnlock(c *Conn, key, token string) error {
	return release(c, writeFamily.release, key, token)
}

// RRenew sends rn; see Renew.
func RRenew(c *Conn, key, token string, opts ...Option) (remaining int, fence uint64, err error) {
	return renew(c, readFamily.renew, key, token, collect(opts))
}

// WRenew sends wn; see Renew.
func WRenew(c *Conn, key, token string, opts ...Option) (remaining int, fence uint64, err error) {
	return renew(c, writeFamily.renew, key, token, collect(opts))
}

// REnqueue sends re, the first phase of a two-phase read acquire; see
// Enqueue.
func REnqueue(c *Conn, key string, opts ...Option) (status, token string, leaseTTL int, fence uint64, err error) {
	status, g, err := enqueue(c, readFamily.enqueue, key, withLease("", collect(opts)))
	return status, g.token, g.lease, g.fence, err
}

// WEnqueue sends we, the first phase of a two-phase write acquire.
func WEnqueue(c *Conn, key string, opts ...Option) (status, token string, leaseTTL int, fence uint64, err error) {
	status, g, err := enqueue(c, writeFamily.enqueue, key, withLease("", collect(opts)))
	return status, g.token, g.lease, g.fence, err
}

// RWait sends rw, the second phase of a read acquire; see Wait.
func RWait(c *Conn, key string, timeout time.Duration) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, readFamily.wait, key, strconv.Itoa(secondsCeil(timeout)))
	return g.token, g.lease, g.fence, err
}

// WWait sends ww, the second phase of a write acquire.
func WWait(c *Conn, key string, timeout time.Duration) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, writeFamily.wait, key, strconv.Itoa(secondsCeil(timeout)))
	return g.token, g.lease, g.fence, err
}
