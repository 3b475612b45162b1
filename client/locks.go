package client

import (
	"context"
	"crypto/tls"
	"strconv"
	"time"
)

// Lock is a distributed lock that, once acquired, renews its lease in the
// background until released. Each acquisition uses a connection of its
// own, closed on release, so the server frees the lock if the process
// dies. Set the fields before first use; do not copy a Lock after that.
//
//	l := &client.Lock{Key: "nightly-report", LeaseTTL: 15}
//	ok, err := l.Acquire(ctx)
//	...
//	defer l.Release(ctx)
//	select {
//	case <-l.Lost(): // the lease could not be kept: stop writing
//	case <-work.Done():
//	}
type Lock struct {
	Key            string          // the lock's name
	AcquireTimeout time.Duration   // how long Acquire waits; default 10 s
	LeaseTTL       int             // lease in seconds; 0 = the server's default
	Servers        []string        // shard servers; default DefaultAddr
	ShardFunc      ShardFunc       // picks the server of Key; default CRC32Shard
	RenewRatio     float64         // renew after this fraction of the lease; default 0.5
	TLSConfig      *tls.Config     // when set, connect over TLS
	AuthToken      string          // when set, authenticate after connecting
	OnRenewError   func(err error) // called (on its own goroutine) when the hold is lost

	// Dialer, when set, is used to connect: its timeouts, keepalive and
	// cluster members (which replace Servers; see Cluster), with which
	// the hold rides through a leader failover (see Lost). TLSConfig and
	// AuthToken above override its own when set.
	Dialer *Dialer

	hold
}

func (l *Lock) config() holdConfig {
	// Positional, to keep the field list in one line per type.
	return holdConfig{l.Key, l.AcquireTimeout, l.LeaseTTL, l.Servers, l.ShardFunc, l.RenewRatio, l.TLSConfig, l.AuthToken, l.OnRenewError, l.Dialer}
}

// Acquire connects and waits up to AcquireTimeout for the lock; it returns
// false and no error on timeout. Once held, the lease is renewed in the
// background. Cancelling ctx abandons the wait (the connection is closed,
// which withdraws it on the server).
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	return l.hold.acquire(ctx, l.config(), lockFamily, 0)
}

// Enqueue is the first phase of a two-phase acquire: it connects and joins
// the queue, returning "acquired" (held, renewal started) or "queued".
func (l *Lock) Enqueue(ctx context.Context) (string, error) {
	return l.hold.enqueue(ctx, l.config(), lockFamily, "")
}

// Wait is the second phase after Enqueue returned "queued": it waits up to
// timeout for the grant, returning false and no error on timeout (which
// also leaves the queue; Enqueue again to rejoin).
func (l *Lock) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	return l.hold.wait(ctx, l.config(), timeout)
}

// Release stops renewal, releases the lock and closes the connection.
func (l *Lock) Release(ctx context.Context) error {
	return l.hold.release(ctx, l.config(), "")
}

// Semaphore is a distributed semaphore of Limit slots: like Lock, with up
// to Limit holders at a time, each with its own token.
type Semaphore struct {
	Key            string
	Limit          int // slots; the first acquirer fixes it for everyone
	AcquireTimeout time.Duration
	LeaseTTL       int
	Servers        []string
	ShardFunc      ShardFunc
	RenewRatio     float64
	TLSConfig      *tls.Config
	AuthToken      string
	OnRenewError   func(err error)
	Dialer         *Dialer

	hold
}

func (s *Semaphore) config() holdConfig {
	return holdConfig{s.Key, s.AcquireTimeout, s.LeaseTTL, s.Servers, s.ShardFunc, s.RenewRatio, s.TLSConfig, s.AuthToken, s.OnRenewError, s.Dialer}
}

// Acquire waits up to AcquireTimeout for a slot; see Lock.Acquire.
func (s *Semaphore) Acquire(ctx context.Context) (bool, error) {
	return s.hold.acquire(ctx, s.config(), semFamily, s.Limit)
}

// Enqueue is the first phase of a two-phase acquire; see Lock.Enqueue.
func (s *Semaphore) Enqueue(ctx context.Context) (string, error) {
	return s.hold.enqueue(ctx, s.config(), semFamily, strconv.Itoa(s.Limit))
}

// Wait is the second phase; see Lock.Wait.
func (s *Semaphore) Wait(ctx context.Context, timeout time.Duration) (bool, error) {
	return s.hold.wait(ctx, s.config(), timeout)
}

// Release gives the slot back and closes the connection.
func (s *Semaphore) Release(ctx context.Context) error {
	return s.hold.release(ctx, s.config(), "")
}

// RWLock is a distributed read-write lock: RLock shares the key with other
// readers, WLock holds it alone. Like Lock, the hold is renewed in the
// background and has a connection of its own.
type RWLock struct {
	Key            string
	AcquireTimeout time.Duration
	LeaseTTL       int
	Servers        []string
	ShardFunc      ShardFunc
	RenewRatio     float64
	TLSConfig      *tls.Config
	AuthToken      string
	OnRenewError   func(err error)
	Dialer         *Dialer

	hold
}

func (rw *RWLock) config() holdConfig {
	return holdConfig{rw.Key, rw.AcquireTimeout, rw.LeaseTTL, rw.Servers, rw.ShardFunc, rw.RenewRatio, rw.TLSConfig, rw.AuthToken, rw.OnRenewError, rw.Dialer}
}

// RLock waits up to AcquireTimeout for a read hold; false, nil on timeout.
func (rw *RWLock) RLock(ctx context.Context) (bool, error) {
	return rw.hold.acquire(ctx, rw.config(), readFamily, 0)
}

// WLock waits up to AcquireTimeout for the write hold; false, nil on
// timeout.
func (rw *RWLock) WLock(ctx context.Context) (bool, error) {
	return rw.hold.acquire(ctx, rw.config(), writeFamily, 0)
}

// Unlock releases the read or write hold and closes the connection.
func (rw *RWLock) Unlock(ctx context.Context) error {
	return rw.hold.release(ctx, rw.config(), "")
}
