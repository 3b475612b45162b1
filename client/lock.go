package client

import (
	"strconv"
	"time"
)

// Acquire sends l: it waits up to acquireTimeout (rounded up to whole
// seconds; 0 tries once) for the lock on key and returns its token and
// lease in seconds. A timeout is ErrTimeout.
func Acquire(c *Conn, key string, acquireTimeout time.Duration, opts ...Option) (token string, leaseTTL int, err error) {
	g, err := acquire(c, lockFamily.acquire, key, acquireArg(acquireTimeout, 0, collect(opts)))
	return g.token, g.lease, err
}

// AcquireWithFence is Acquire that also returns the fence a redis-feats
// server sends as a separate field (0 from servers that do not; on
// dflockd v2 and dflockd-ng the fence is the token's prefix, see
// FenceFromToken).
func AcquireWithFence(c *Conn, key string, acquireTimeout time.Duration, opts ...Option) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, lockFamily.acquire, key, acquireArg(acquireTimeout, 0, collect(opts)))
	return g.token, g.lease, g.fence, err
}

// Release sends r: it releases the lock on key held with token. Any
// connection that knows the token may release it.
func Release(c *Conn, key, token string) error {
	return release(c, lockFamily.release, key, token)
}

// Renew sends n: the lease restarts now, for the lease asked for with
// WithLeaseTTL or else the server's default (not the lease of the
// acquire). It returns the lease in seconds.
func Renew(c *Conn, key, token string, opts ...Option) (remaining int, err error) {
	remaining, _, err = renew(c, lockFamily.renew, key, token, collect(opts))
	return remaining, err
}

// RenewWithFence is Renew that also returns a redis-feats server's fence.
func RenewWithFence(c *Conn, key, token string, opts ...Option) (remaining int, fence uint64, err error) {
	return renew(c, lockFamily.renew, key, token, collect(opts))
}

// Enqueue sends e, the first phase of a two-phase acquire: status is
// "acquired" (with token and lease) when the lock was free, else
// "queued", and Wait on the same connection collects the grant.
func Enqueue(c *Conn, key string, opts ...Option) (status, token string, leaseTTL int, err error) {
	status, g, err := enqueue(c, lockFamily.enqueue, key, withLease("", collect(opts)))
	return status, g.token, g.lease, err
}

// EnqueueWithFence is Enqueue that also returns a redis-feats server's
// fence.
func EnqueueWithFence(c *Conn, key string, opts ...Option) (status, token string, leaseTTL int, fence uint64, err error) {
	status, g, err := enqueue(c, lockFamily.enqueue, key, withLease("", collect(opts)))
	return status, g.token, g.lease, g.fence, err
}

// Wait sends w, the second phase: it waits up to waitTimeout for the lock
// enqueued on this connection. ErrTimeout removes the connection from the
// queue; ErrNotQueued means there was no Enqueue.
func Wait(c *Conn, key string, waitTimeout time.Duration) (token string, leaseTTL int, err error) {
	g, err := acquire(c, lockFamily.wait, key, strconv.Itoa(secondsCeil(waitTimeout)))
	return g.token, g.lease, err
}

// WaitWithFence is Wait that also returns a redis-feats server's fence.
func WaitWithFence(c *Conn, key string, waitTimeout time.Duration) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, lockFamily.wait, key, strconv.Itoa(secondsCeil(waitTimeout)))
	return g.token, g.lease, g.fence, err
}

// SemAcquire sends sl: it waits up to acquireTimeout for one of limit
// slots of the semaphore key. The first acquirer fixes the limit; a
// different one is ErrLimitMismatch.
func SemAcquire(c *Conn, key string, acquireTimeout time.Duration, limit int, opts ...Option) (token string, leaseTTL int, err error) {
	g, err := acquire(c, semFamily.acquire, key, acquireArg(acquireTimeout, limit, collect(opts)))
	return g.token, g.lease, err
}

// SemAcquireWithFence is SemAcquire that also returns a redis-feats
// server's fence.
func SemAcquireWithFence(c *Conn, key string, acquireTimeout time.Duration, limit int, opts ...Option) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, semFamily.acquire, key, acquireArg(acquireTimeout, limit, collect(opts)))
	return g.token, g.lease, g.fence, err
}

// SemRelease sends sr: it gives back the semaphore slot held with token.
func SemRelease(c *Conn, key, token string) error {
	return release(c, semFamily.release, key, token)
}

// SemRenew sends sn; see Renew.
func SemRenew(c *Conn, key, token string, opts ...Option) (remaining int, err error) {
	remaining, _, err = renew(c, semFamily.renew, key, token, collect(opts))
	return remaining, err
}

// SemRenewWithFence is SemRenew that also returns a redis-feats server's
// fence.
func SemRenewWithFence(c *Conn, key, token string, opts ...Option) (remaining int, fence uint64, err error) {
	return renew(c, semFamily.renew, key, token, collect(opts))
}

// SemEnqueue sends se, the first phase of a two-phase semaphore acquire;
// see Enqueue.
func SemEnqueue(c *Conn, key string, limit int, opts ...Option) (status, token string, leaseTTL int, err error) {
	status, g, err := enqueue(c, semFamily.enqueue, key, withLease(strconv.Itoa(limit), collect(opts)))
	return status, g.token, g.lease, err
}

// SemEnqueueWithFence is SemEnqueue that also returns a redis-feats
// server's fence.
func SemEnqueueWithFence(c *Conn, key string, limit int, opts ...Option) (status, token string, leaseTTL int, fence uint64, err error) {
	status, g, err := enqueue(c, semFamily.enqueue, key, withLease(strconv.Itoa(limit), collect(opts)))
	return status, g.token, g.lease, g.fence, err
}

// SemWait sends sw, the second phase; see Wait.
func SemWait(c *Conn, key string, waitTimeout time.Duration) (token string, leaseTTL int, err error) {
	g, err := acquire(c, semFamily.wait, key, strconv.Itoa(secondsCeil(waitTimeout)))
	return g.token, g.lease, err
}

// SemWaitWithFence is SemWait that also returns a redis-feats server's
// fence.
func SemWaitWithFence(c *Conn, key string, waitTimeout time.Duration) (token string, leaseTTL int, fence uint64, err error) {
	g, err := acquire(c, semFamily.wait, key, strconv.Itoa(secondsCeil(waitTimeout)))
	return g.token, g.lease, g.fence, err
}
