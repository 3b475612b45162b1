package engine

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// Defaults; each matches dflockd's (spec §E.2) unless noted.
const (
	DefaultShards   = 256 // ≥ 8 × loops on common hosts keeps shard contention rare
	DefaultLease    = 33 * time.Second
	DefaultMaxLocks = 1024
	DefaultGCIdle   = 60 * time.Second
	// expireBudget bounds the timers one Expire call fires while holding a
	// shard lock, so an expiry storm cannot starve requests on that shard.
	expireBudget = 512
)

// Config tunes an Engine. The zero value of every field means its default.
type Config struct {
	Shards       int           // rounded up to a power of two
	DefaultLease time.Duration // lease when a request names none
	MaxLocks     int           // distinct lock + semaphore keys; <0 = unlimited
	MaxWaiters   int           // queued waiters per key; 0 = unlimited
	// KeepOnDisconnect keeps a closed connection's held slots until their
	// leases run out (--auto-release-on-disconnect=false). Waiters are
	// always cancelled (spec §I.7).
	KeepOnDisconnect bool
	GCMaxIdle        time.Duration // idle keys older than this are pruned; <0 = at once
	MaxKeys          int           // counters + KV + lists + barriers; 0 = unlimited
	MaxListLength    int           // items per list; 0 = unlimited
	MaxSubscriptions int           // listen registrations per connection; 0 = unlimited
	// Profile selects the semantics of a dflockd release line where they
	// differ from v2 (spec §I): see the uses of e.rf() and of the
	// profile's methods.
	Profile parse.Profile
	Clock   timerwheel.Clock
	Fences  FenceSource // default: a volatile fence.Allocator
	// NewSalt makes one salt source per shard (token entropy); tests may
	// substitute a deterministic one.
	NewSalt func() SaltSource
}

// FenceSource hands out strictly increasing fences (fence.Allocator).
type FenceSource interface{ Next() (uint64, error) }

// SaltSource yields the random half of tokens; used under a shard lock.
type SaltSource interface{ Next() uint64 }

// Notifier receives events for sessions other than the caller's. Deliver
// is called with a shard lock held: it must queue and return at once.
type Notifier interface {
	Deliver(s *Session, r Result)
	// Backlogged reports whether one more push to s would exceed its
	// unread-push bound; queue groups then pick another member.
	Backlogged(s *Session) bool
}

// Result is the outcome of a request, or an event delivered later.
type Result struct {
	Status parse.Status
	Kind   ResultKind
	Token  fence.Token
	Lease  int64  // seconds, for grants; remaining seconds for renewals
	Int    int64  // KindInt
	Value  string // KindValue; immutable, safe to use after the lock is gone
	// Blocked: no reply yet; exactly one Result for this request will
	// reach the session through the Notifier.
	Blocked bool
	// Tag is the caller's tag of a tagged acquire (AcquireTagged, see
	// foreign.go), copied into its delivery so that a session with several
	// parked acquires can tell them apart; 0 for every other request.
	Tag uint32
}

// ResultKind tells the loop how to encode a Result.
type ResultKind uint8

const (
	KindStatus ResultKind = iota // bare status word
	KindGrant                    // "<status> <token> <lease>"
	KindRenew                    // "ok <remaining>"
	KindInt                      // "ok <integer>"
	KindValue                    // "ok <value>"
	// KindPush is an asynchronous line (Value, e.g. "sig <ch> <payload>")
	// for a subscriber; it answers no request and unblocks nothing.
	KindPush
)

// Engine is the lock table. Create it with New, start its timers with
// Start, and stop them with Stop.
type Engine struct {
	cfg      Config
	shards   []shard
	mask     uint64
	notify   Notifier
	clock    timerwheel.Clock
	driver   *timerwheel.Driver
	subs     *Sublist     // pub/sub subscriptions
	watches  *Sublist     // key watches
	keys     atomic.Int64 // live lock + semaphore resources, for MaxLocks
	rfKeys   atomic.Int64 // live counters, KV entries, lists, barriers, for MaxKeys
	sessions atomic.Uint64
	draining atomic.Bool // after Drain: no request may start waiting
}

// New builds an engine. n receives deliveries for parked sessions.
func New(cfg Config, n Notifier) *Engine {
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShards
	}
	shards := 1
	for shards < cfg.Shards {
		shards <<= 1
	}
	cfg.Shards = shards
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = DefaultLease
	}
	if cfg.MaxLocks == 0 {
		cfg.MaxLocks = DefaultMaxLocks
	} else if cfg.MaxLocks < 0 {
		cfg.MaxLocks = math.MaxInt
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = math.MaxInt
	}
	if cfg.GCMaxIdle == 0 {
		cfg.GCMaxIdle = DefaultGCIdle
	} else if cfg.GCMaxIdle < 0 {
		cfg.GCMaxIdle = 0
	}
	if cfg.Clock == nil {
		cfg.Clock = timerwheel.NewMonoClock()
	}
	if cfg.Fences == nil {
		cfg.Fences = fence.NewVolatile()
	}
	if cfg.NewSalt == nil {
		cfg.NewSalt = func() SaltSource { return fence.NewSalt() }
	}
	e := &Engine{
		cfg:     cfg,
		shards:  make([]shard, shards),
		mask:    uint64(shards - 1),
		notify:  n,
		clock:   cfg.Clock,
		subs:    NewSublist(),
		watches: NewSublist(),
	}
	now := e.clock.Now()
	targets := make([]timerwheel.Target, shards)
	for i := range e.shards {
		e.shards[i].init(e, i, now)
		targets[i] = &e.shards[i]
	}
	e.driver = timerwheel.NewDriver(e.clock, targets)
	return e
}

// Start runs the timer driver: leases and timeouts fire only after Start.
func (e *Engine) Start() { e.driver.Start() }

// Stop halts the timer driver.
func (e *Engine) Stop() { e.driver.Stop() }

// Expire advances every shard's timers to now. Tests with a fake clock call
// it instead of Start.
func (e *Engine) Expire() {
	now := e.clock.Now()
	for i := range e.shards {
		for {
			next, ok := e.shards[i].Expire(now)
			if !ok || !now.Passed(next) {
				break
			}
		}
	}
}

func (e *Engine) shardFor(key []byte) *shard {
	return &e.shards[xxhash.Sum64(key)&e.mask]
}

// leaseMs turns a requested lease in seconds (0 = default) into ms.
func (e *Engine) leaseMs(seconds int64) int64 {
	if seconds == 0 {
		return e.cfg.DefaultLease.Milliseconds()
	}
	return seconds * 1000
}

// Do executes a request for session s.
func (e *Engine) Do(s *Session, r *parse.Request) Result {
	ns := nsLock
	if r.Op.Semaphore() && !e.cfg.Profile.SharedLockSpace() {
		// v2 keeps separate namespaces; v1.10 and the rf line have one
		// map where a lock is a semaphore of limit 1 (spec §B.2).
		ns = nsSem
	}
	// Read-write locks are a type in the lock namespace (spec §I.6); their
	// release, renew and wait are the lock ones (§B.4: the mode of a token
	// is not checked, and w/rw/ww share one two-phase state).
	m := mode{limit: int(max(r.Limit, 1)), rw: r.Op.ReadWrite(), writer: r.Op.Writer()}
	switch r.Op {
	case parse.OpLock, parse.OpSemLock, parse.OpReadLock, parse.OpWriteLock:
		return e.acquire(s, ns, r.Key, m, r.Timeout*1000, e.leaseMs(r.Lease))
	case parse.OpRelease, parse.OpSemRelease, parse.OpReadRelease, parse.OpWriteRelease:
		return e.release(ns, r.Key, r.Token)
	case parse.OpRenew, parse.OpSemRenew, parse.OpReadRenew, parse.OpWriteRenew:
		return e.renew(ns, r.Key, r.Token, e.leaseMs(r.Lease))
	case parse.OpEnqueue, parse.OpSemEnqueue, parse.OpReadEnqueue, parse.OpWriteEnqueue:
		return e.enqueue(s, ns, r.Key, m, e.leaseMs(r.Lease))
	case parse.OpWait, parse.OpSemWait, parse.OpReadWait, parse.OpWriteWait:
		return e.wait(s, ns, r.Key, r.Timeout*1000)
	case parse.OpIncr, parse.OpDecr, parse.OpGet, parse.OpCSet:
		return e.counterOp(r)
	case parse.OpKSet, parse.OpKGet, parse.OpKDel, parse.OpKCAS:
		return e.kvOp(r)
	case parse.OpLPush, parse.OpRPush, parse.OpLPop, parse.OpRPop, parse.OpLLen, parse.OpLRange,
		parse.OpBLPop, parse.OpBRPop:
		return e.listOp(s, r)
	case parse.OpListen, parse.OpUnlisten, parse.OpSignal:
		return e.pubsubOp(s, r)
	case parse.OpWatch, parse.OpUnwatch:
		return e.watchOp(s, r)
	case parse.OpBWait:
		return e.bwait(s, r)
	case parse.OpElect:
		return e.elect(s, r)
	case parse.OpResign:
		return e.resign(s, r.Key, r.Token)
	case parse.OpObserve:
		return e.observe(s, r.Key)
	case parse.OpUnobserve:
		return e.unobserve(s, r.Key)
	}
	panic("engine: Do called with unsupported op " + r.Op.String())
}

func status(s parse.Status) Result { return Result{Status: s} }

// rf reports the redis-feats profile.
func (e *Engine) rf() bool { return e.cfg.Profile == parse.ProfileRF }
