package client_test

// This file is written only against the exported names and signatures of
// dflockd's own Go client, github.com/mtingers/dflockd/client, as of its
// main line (v1.10.0) and its redis-feats line. It contains no test: it
// compiles with "go test" and "go vet" only while this package offers the
// same API, so a program written for that client can switch by changing
// its import path alone.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// Every exported function and method, with dflockd's exact signature.
var (
	// Functions.
	_ func(*client.Conn, string, time.Duration, ...client.Option) (string, int, error)              = client.Acquire
	_ func(*client.Conn, string, time.Duration, ...client.Option) (string, int, uint64, error)      = client.AcquireWithFence
	_ func(*client.Conn, string) error                                                              = client.Authenticate
	_ func(*client.Conn, string, time.Duration) (string, error)                                     = client.BLPop
	_ func(*client.Conn, string, time.Duration) (string, error)                                     = client.BRPop
	_ func(*client.Conn, string, int, time.Duration) (bool, error)                                  = client.BarrierWait
	_ func(string, int) int                                                                         = client.CRC32Shard
	_ func(*client.Conn, string, int64) (int64, error)                                              = client.Decr
	_ func(string) (*client.Conn, error)                                                            = client.Dial
	_ func(string, *tls.Config) (*client.Conn, error)                                               = client.DialTLS
	_ func(*client.Conn, string, string) (int, error)                                               = client.Emit
	_ func(*client.Conn, string, ...client.Option) (string, string, int, error)                     = client.Enqueue
	_ func(*client.Conn, string, ...client.Option) (string, string, int, uint64, error)             = client.EnqueueWithFence
	_ func(*client.Conn, string) (int64, error)                                                     = client.GetCounter
	_ func(*client.Conn, string, int64) (int64, error)                                              = client.Incr
	_ func(*client.Conn, string, string, string, int) (bool, error)                                 = client.KVCAS
	_ func(*client.Conn, string) error                                                              = client.KVDel
	_ func(*client.Conn, string) (string, error)                                                    = client.KVGet
	_ func(*client.Conn, string, string, int) error                                                 = client.KVSet
	_ func(*client.Conn, string) (int, error)                                                       = client.LLen
	_ func(*client.Conn, string) (string, error)                                                    = client.LPop
	_ func(*client.Conn, string, string) (int, error)                                               = client.LPush
	_ func(*client.Conn, string, int, int) ([]string, error)                                        = client.LRange
	_ func(*client.Conn) *client.LeaderConn                                                         = client.NewLeaderConn
	_ func(*client.Conn) *client.SignalConn                                                         = client.NewSignalConn
	_ func(*client.Conn) *client.WatchConn                                                          = client.NewWatchConn
	_ func(*client.Conn, string, ...client.Option) (string, string, int, uint64, error)             = client.REnqueue
	_ func(*client.Conn, string, time.Duration, ...client.Option) (string, int, uint64, error)      = client.RLock
	_ func(*client.Conn, string) (string, error)                                                    = client.RPop
	_ func(*client.Conn, string, string) (int, error)                                               = client.RPush
	_ func(*client.Conn, string, string, ...client.Option) (int, uint64, error)                     = client.RRenew
	_ func(*client.Conn, string, string) error                                                      = client.RUnlock
	_ func(*client.Conn, string, time.Duration) (string, int, uint64, error)                        = client.RWait
	_ func(*client.Conn, string, string) error                                                      = client.Release
	_ func(*client.Conn, string, string, ...client.Option) (int, error)                             = client.Renew
	_ func(*client.Conn, string, string, ...client.Option) (int, uint64, error)                     = client.RenewWithFence
	_ func(*client.Conn, string, time.Duration, int, ...client.Option) (string, int, error)         = client.SemAcquire
	_ func(*client.Conn, string, time.Duration, int, ...client.Option) (string, int, uint64, error) = client.SemAcquireWithFence
	_ func(*client.Conn, string, int, ...client.Option) (string, string, int, error)                = client.SemEnqueue
	_ func(*client.Conn, string, int, ...client.Option) (string, string, int, uint64, error)        = client.SemEnqueueWithFence
	_ func(*client.Conn, string, string) error                                                      = client.SemRelease
	_ func(*client.Conn, string, string, ...client.Option) (int, error)                             = client.SemRenew
	_ func(*client.Conn, string, string, ...client.Option) (int, uint64, error)                     = client.SemRenewWithFence
	_ func(*client.Conn, string, time.Duration) (string, int, error)                                = client.SemWait
	_ func(*client.Conn, string, time.Duration) (string, int, uint64, error)                        = client.SemWaitWithFence
	_ func(*client.Conn, string, int64) error                                                       = client.SetCounter
	_ func(*client.Conn, string, ...client.Option) (string, string, int, uint64, error)             = client.WEnqueue
	_ func(*client.Conn, string, time.Duration, ...client.Option) (string, int, uint64, error)      = client.WLock
	_ func(*client.Conn, string, string, ...client.Option) (int, uint64, error)                     = client.WRenew
	_ func(*client.Conn, string, string) error                                                      = client.WUnlock
	_ func(*client.Conn, string, time.Duration) (string, int, uint64, error)                        = client.WWait
	_ func(*client.Conn, string, time.Duration) (string, int, error)                                = client.Wait
	_ func(*client.Conn, string, time.Duration) (string, int, uint64, error)                        = client.WaitWithFence
	_ func(string) client.ListenOption                                                              = client.WithGroup
	_ func(int) client.Option                                                                       = client.WithLeaseTTL

	// Methods.
	_ func(*client.Conn) error                                                                       = (*client.Conn).Close
	_ func(*client.Election, context.Context) (bool, error)                                          = (*client.Election).Campaign
	_ func(*client.Election) error                                                                   = (*client.Election).Close
	_ func(*client.Election) uint64                                                                  = (*client.Election).Fence
	_ func(*client.Election) bool                                                                    = (*client.Election).IsLeader
	_ func(*client.Election, context.Context) error                                                  = (*client.Election).Resign
	_ func(*client.Election) string                                                                  = (*client.Election).Token
	_ func(*client.Lock, context.Context) (bool, error)                                              = (*client.Lock).Acquire
	_ func(*client.Lock) error                                                                       = (*client.Lock).Close
	_ func(*client.Lock, context.Context) (string, error)                                            = (*client.Lock).Enqueue
	_ func(*client.Lock) uint64                                                                      = (*client.Lock).Fence
	_ func(*client.Lock, context.Context) error                                                      = (*client.Lock).Release
	_ func(*client.Lock) string                                                                      = (*client.Lock).Token
	_ func(*client.Lock, context.Context, time.Duration) (bool, error)                               = (*client.Lock).Wait
	_ func(*client.LeaderConn) error                                                                 = (*client.LeaderConn).Close
	_ func(*client.LeaderConn, string, time.Duration, ...client.Option) (string, int, uint64, error) = (*client.LeaderConn).Elect
	_ func(*client.LeaderConn) <-chan client.LeaderEvent                                             = (*client.LeaderConn).Events
	_ func(*client.LeaderConn, string) error                                                         = (*client.LeaderConn).Observe
	_ func(*client.LeaderConn, string, string, ...client.Option) (int, uint64, error)                = (*client.LeaderConn).Renew
	_ func(*client.LeaderConn, string, string) error                                                 = (*client.LeaderConn).Resign
	_ func(*client.LeaderConn, string) error                                                         = (*client.LeaderConn).Unobserve
	_ func(*client.RWLock) error                                                                     = (*client.RWLock).Close
	_ func(*client.RWLock) uint64                                                                    = (*client.RWLock).Fence
	_ func(*client.RWLock, context.Context) (bool, error)                                            = (*client.RWLock).RLock
	_ func(*client.RWLock) string                                                                    = (*client.RWLock).Token
	_ func(*client.RWLock, context.Context) error                                                    = (*client.RWLock).Unlock
	_ func(*client.RWLock, context.Context) (bool, error)                                            = (*client.RWLock).WLock
	_ func(*client.Semaphore, context.Context) (bool, error)                                         = (*client.Semaphore).Acquire
	_ func(*client.Semaphore) error                                                                  = (*client.Semaphore).Close
	_ func(*client.Semaphore, context.Context) (string, error)                                       = (*client.Semaphore).Enqueue
	_ func(*client.Semaphore) uint64                                                                 = (*client.Semaphore).Fence
	_ func(*client.Semaphore, context.Context) error                                                 = (*client.Semaphore).Release
	_ func(*client.Semaphore) string                                                                 = (*client.Semaphore).Token
	_ func(*client.Semaphore, context.Context, time.Duration) (bool, error)                          = (*client.Semaphore).Wait
	_ func(*client.SignalConn) error                                                                 = (*client.SignalConn).Close
	_ func(*client.SignalConn, string, string) (int, error)                                          = (*client.SignalConn).Emit
	_ func(*client.SignalConn, string, ...client.ListenOption) error                                 = (*client.SignalConn).Listen
	_ func(*client.SignalConn) <-chan client.Signal                                                  = (*client.SignalConn).Signals
	_ func(*client.SignalConn, string, ...client.ListenOption) error                                 = (*client.SignalConn).Unlisten
	_ func(*client.WatchConn) error                                                                  = (*client.WatchConn).Close
	_ func(*client.WatchConn) <-chan client.WatchEvent                                               = (*client.WatchConn).Events
	_ func(*client.WatchConn, string) error                                                          = (*client.WatchConn).Unwatch
	_ func(*client.WatchConn, string) error                                                          = (*client.WatchConn).Watch
)

// Exported variables, constants and types.
var (
	_ []error = []error{
		client.ErrTimeout, client.ErrMaxLocks, client.ErrMaxWaiters, client.ErrServer,
		client.ErrNotQueued, client.ErrAlreadyQueued, client.ErrLimitMismatch,
		client.ErrLeaseExpired, client.ErrAuth, client.ErrMaxKeys, client.ErrNotFound,
		client.ErrListFull, client.ErrBarrierCountMismatch, client.ErrTypeMismatch,
	}
	_ time.Duration         = client.DefaultDialTimeout
	_ client.ShardFunc      = client.CRC32Shard
	_ func(string, int) int = client.ShardFunc(nil)
	_ client.Option         = client.WithLeaseTTL(1)
	_ client.ListenOption   = client.WithGroup("g")
	_ client.Signal         = client.Signal{Channel: "c", Payload: "p"}
	_ client.WatchEvent     = client.WatchEvent{Type: "kset", Key: "k"}
	_ client.LeaderEvent    = client.LeaderEvent{Type: "elected", Key: "k"}
)

// The high-level types, with every field of both lines set by name.
func compatHighLevel(cfg *tls.Config, onErr func(error)) {
	_ = &client.Lock{
		Key: "k", AcquireTimeout: time.Second, LeaseTTL: 10, Servers: []string{"127.0.0.1:6388"},
		ShardFunc: client.CRC32Shard, RenewRatio: 0.5, TLSConfig: cfg, AuthToken: "t", OnRenewError: onErr,
	}
	_ = &client.Semaphore{
		Key: "k", Limit: 3, AcquireTimeout: time.Second, LeaseTTL: 10, Servers: []string{"127.0.0.1:6388"},
		ShardFunc: client.CRC32Shard, RenewRatio: 0.5, TLSConfig: cfg, AuthToken: "t", OnRenewError: onErr,
	}
	_ = &client.RWLock{
		Key: "k", AcquireTimeout: time.Second, LeaseTTL: 10, Servers: []string{"127.0.0.1:6388"},
		ShardFunc: client.CRC32Shard, RenewRatio: 0.5, TLSConfig: cfg, AuthToken: "t", OnRenewError: onErr,
	}
	_ = &client.Election{
		Key: "k", AcquireTimeout: time.Second, LeaseTTL: 10, Servers: []string{"127.0.0.1:6388"},
		ShardFunc: client.CRC32Shard, TLSConfig: cfg, AuthToken: "t", RenewRatio: 0.5,
		OnElected: func() {}, OnResigned: func() {}, OnRenewError: onErr,
	}
}

// A program as dflockd's documentation shows them, using both the
// low-level functions and the high-level types.
func compatProgram(ctx context.Context) error {
	c, err := client.Dial("127.0.0.1:6388")
	if err != nil {
		return err
	}
	defer c.Close()
	if err := client.Authenticate(c, "secret"); err != nil && !errors.Is(err, client.ErrAuth) {
		return err
	}
	token, lease, err := client.Acquire(c, "job", 10*time.Second, client.WithLeaseTTL(30))
	if errors.Is(err, client.ErrTimeout) {
		return nil
	}
	fmt.Println(token, lease)
	if _, err := client.Renew(c, "job", token); err != nil {
		return err
	}
	if err := client.Release(c, "job", token); err != nil {
		return err
	}
	status, _, _, err := client.Enqueue(c, "job")
	if err == nil && status == "queued" {
		_, _, err = client.Wait(c, "job", 5*time.Second)
	}
	if err != nil {
		return err
	}
	n, _ := client.Incr(c, "visits", 1)
	_ = client.KVSet(c, "cfg", fmt.Sprint(n), 0)
	if v, err := client.KVGet(c, "cfg"); err == client.ErrNotFound {
		fmt.Println("absent")
	} else {
		fmt.Println(v)
	}
	sc := client.NewSignalConn(c)
	_ = sc.Listen("orders.*", client.WithGroup("workers"))
	for sig := range sc.Signals() {
		fmt.Println(sig.Channel, sig.Payload)
		break
	}
	wc := client.NewWatchConn(c)
	_ = wc.Watch("cfg")
	for ev := range wc.Events() {
		fmt.Println(ev.Type, ev.Key)
		break
	}
	lock := &client.Lock{Key: "job", Servers: []string{"127.0.0.1:6388"}, OnRenewError: func(error) {}}
	ok, err := lock.Acquire(ctx)
	if err != nil || !ok {
		return err
	}
	fmt.Println(lock.Token(), lock.Fence())
	defer lock.Release(ctx)
	e := &client.Election{Key: "leader", Servers: []string{"127.0.0.1:6388"}, OnElected: func() {}}
	if won, _ := e.Campaign(ctx); won && e.IsLeader() {
		return e.Resign(ctx)
	}
	return nil
}

var _ = compatHighLevel
var _ = compatProgram
