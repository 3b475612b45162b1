package engine

import (
	"encoding/binary"
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sys/cpu"

	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Defaults; each matches dflockd's (spec §E.2) unless noted.
const (
	// Without Config.Shards an engine gets ShardsPerProc shards per
	// GOMAXPROCS, as a power of two, at most MaxDefaultShards
	// (DefaultShardsFor). 16 per goroutine that can run at once keeps two
	// of them rarely on one shard's lock; more only spread the request
	// path's memory (every shard has its resource tables, timer wheel
	// and free slots): on one loop, 16 shards took 0.96× the server CPU
	// per lock+release of 256, 0.90× when the VM's caches were contended
	// (PERF.md, lock and release).
	ShardsPerProc    = 16
	MaxDefaultShards = 256
	MaxShards        = 1 << 16 // a slot records its shard in 16 bits
	DefaultLease     = 33 * time.Second
	DefaultMaxLocks  = 1024
	DefaultGCIdle    = 60 * time.Second
	// DefaultMaxRegistrations: see Config.MaxRegistrations; 1024
	// registrations of ~200 B each bound a session's at ~200 KiB.
	DefaultMaxRegistrations = 1024
)

// Config tunes an Engine. The zero value of every field means its default.
type Config struct {
	Shards       int           // rounded up to a power of two, at most MaxShards; 0: DefaultShardsFor(GOMAXPROCS)
	DefaultLease time.Duration // lease when a request names none
	MaxLocks     int           // distinct lock + semaphore keys; <0 = unlimited
	MaxWaiters   int           // queued waiters per key; 0 = unlimited
	// KeepOnDisconnect keeps a closed session's held slots until their
	// leases run out (--auto-release-on-disconnect=false). Waiters are
	// always cancelled (spec §I.7).
	KeepOnDisconnect bool
	GCMaxIdle        time.Duration // idle keys older than this are pruned; <0 = at once
	MaxKeys          int           // counters + KV + lists + barriers; 0 = unlimited
	MaxListLength    int           // items per list; 0 = unlimited
	MaxSubscriptions int           // listen registrations per session (rf: + watch + observe); 0 = unlimited
	// MaxRegistrations bounds a session's listen, watch and observe
	// registrations together whatever MaxSubscriptions says (default
	// 1024, <0 = unlimited): each costs memory until the session closes,
	// and a client that keeps registering distinct patterns would grow
	// the server without bound. dflockd has no such bound; no client that
	// registers what it reads comes near it.
	MaxRegistrations int
	// Profile selects the semantics of a dflockd release line where they
	// differ from v2 (spec §I): see the uses of e.rf() and of the
	// profile's methods.
	Profile vocab.Profile
	// Start is the time of the engine's creation; the first command's At
	// must not be earlier.
	Start timerwheel.Instant
	// FenceFloor: every fence issued is above it (single node: the
	// recovered durable ceiling, or the clock at startup, spec §C.2).
	FenceFloor uint64
	// Ceiling, if set, must admit each fence before it is issued.
	Ceiling FenceCeiling
	// TokenKey keys the token salts (token.go); pick it at random.
	TokenKey TokenKey
	// OnDeadline, if set, is told when a shard's earliest deadline moves
	// earlier, so that a timer driver can wake in time to call Advance.
	// It runs with the shard's lock held and must not block.
	OnDeadline func(shard int, at timerwheel.Tick)
	// Events, if > 0, turns the lock observatory's recording on: a ring
	// of about this many lock events, split over the shards (at least 16
	// each), and the grant and queue times of live claims (events.go).
	// Each event costs 80 bytes, plus the key it names while the
	// ring holds it. 0 = off: the hooks are a nil check.
	Events int
}

// Engine is the state of every primitive: a deterministic state machine.
// Apply runs a command and returns its caller's Result; Advance moves
// time forward and fires what is due. Both append their effects on other
// sessions (late replies, pushes) to a caller-owned Effects, in order,
// without delivering anything: the engine starts no goroutine, reads no
// clock and no randomness, and knows nothing of transports.
//
// Concurrency: Apply and Advance are safe for concurrent use, except that
// the commands of one session must be applied one at a time, in order,
// and that requests queue behind a wait (queue.go) only where every
// command is applied from one goroutine.
// Commands on different keys run in parallel (xxhash shards, one mutex
// each); see LOCKING.md.
type Engine struct {
	cfg      Config
	shards   []shard
	mask     uint64
	subs     *Sublist // pub/sub subscriptions
	watches  *Sublist // key watches
	sessions sessionTable
	tenants  tenantTable // quotas' tenants by identity (tenant.go)
	conns    connIndex   // a cluster's connections' sessions (conns.go)
	refs     stableRefs  // a cluster's stable refs and orphans (stableref.go)
	k0, k1   uint64      // TokenKey
	draining atomic.Bool // after a drain: no request may start waiting
	adv      advancer
	// The counters every grant (fence) or new and dropped resource
	// (keys, rfKeys) writes, from any loop. Each has a cache line of its
	// own: beside the fields every request reads (shards, mask, cfg,
	// k0/k1), each write would make every other core reload those too.
	// With two loops on shared shards that cost a tenth of their time.
	keys   lonelyInt64  // live lock + semaphore resources, for MaxLocks
	rfKeys lonelyInt64  // live counters, KV entries, lists, barriers, for MaxKeys
	fence  lonelyUint64 // the last fence issued
}

// lonelyInt64 and lonelyUint64 are atomics alone on their cache line.
type lonelyInt64 struct {
	_ cpu.CacheLinePad
	atomic.Int64
	_ cpu.CacheLinePad
}

type lonelyUint64 struct {
	_ cpu.CacheLinePad
	atomic.Uint64
	_ cpu.CacheLinePad
}

// DefaultShardsFor is the shard count of an engine whose requests run on
// procs goroutines at once: ShardsPerProc each, as a power of two, at
// most MaxDefaultShards.
func DefaultShardsFor(procs int) int {
	n := ShardsPerProc
	for n < ShardsPerProc*procs && n < MaxDefaultShards {
		n <<= 1
	}
	return n
}

// New builds an engine.
func New(cfg Config) *Engine {
	if cfg.Shards <= 0 {
		cfg.Shards = DefaultShardsFor(runtime.GOMAXPROCS(0))
	}
	cfg.Shards = min(cfg.Shards, MaxShards)
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
	if cfg.MaxRegistrations == 0 {
		cfg.MaxRegistrations = DefaultMaxRegistrations
	} else if cfg.MaxRegistrations < 0 {
		cfg.MaxRegistrations = math.MaxInt
	}
	if cfg.GCMaxIdle == 0 {
		cfg.GCMaxIdle = DefaultGCIdle
	} else if cfg.GCMaxIdle < 0 {
		cfg.GCMaxIdle = 0
	}
	e := &Engine{
		cfg:     cfg,
		shards:  make([]shard, shards),
		mask:    uint64(shards - 1),
		subs:    NewSublist(),
		watches: NewSublist(),
		k0:      binary.LittleEndian.Uint64(cfg.TokenKey[:8]),
		k1:      binary.LittleEndian.Uint64(cfg.TokenKey[8:]),
	}
	e.fence.Store(cfg.FenceFloor)
	for i := range e.shards {
		e.shards[i].init(e, i, cfg.Start.Tick())
	}
	return e
}

// Shards returns the number of shards (for a driver of their timers).
func (e *Engine) Shards() int { return len(e.shards) }

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

// rf reports the redis-feats profile.
func (e *Engine) rf() bool { return e.cfg.Profile == vocab.ProfileRF }

// Apply runs one command and returns its caller's Result. Effects on
// other sessions (and pushes to the caller) are appended to fx. A request
// of a session whose request waits queues behind it (Blocked, queue.go);
// the queues of sessions whose waits this command ends run before Apply
// returns, their answers appended to fx as late replies.
func (e *Engine) Apply(c *Command, fx *Effects) Result {
	var r Result
	e.ApplyTo(c, fx, &r)
	return r
}

// ApplyTo is Apply writing the caller's Result into *r, which it
// overwrites whole. The request path keeps *r in its scratch: a 136-byte
// Result returned by value is copied once per call it passes through
// (issue #21).
func (e *Engine) ApplyTo(c *Command, fx *Effects, r *Result) {
	start := len(fx.List)
	if c.Kind == KindRequest {
		e.applyRequest(c, fx, r)
	} else {
		*r = e.apply(c, fx)
	}
	e.resumeQueues(c.At, fx, start)
}

// applyRequest runs a KindRequest command into *out.
func (e *Engine) applyRequest(c *Command, fx *Effects, out *Result) {
	s := e.sessions.get(c.Session)
	if s == nil {
		e.request(c, fx, out) // a session-free request (a test's counter)
		return
	}
	if e.queued(s, fx) {
		s.queue = appendQueued(s.queue, c)
		*out = Result{Blocked: true}
		return
	}
	e.request(c, fx, out)
	if out.Blocked {
		s.waits = true
	}
}

// apply runs a command of any kind but KindRequest (ApplyTo's
// applyRequest).
func (e *Engine) apply(c *Command, fx *Effects) Result {
	switch c.Kind {
	case KindOpen:
		s := e.sessions.open(c.ConnID, c.At.Tick())
		if c.ConnID != 0 {
			e.attach(s, c.ConnID) // a cluster's connection (conns.go)
		}
		return Result{Status: vocab.StatusOK, Session: s.id}
	case KindClose:
		e.closeSession(e.mustSession(c.Session), c.At, c.Keep || e.cfg.KeepOnDisconnect, fx)
	case KindGC:
		e.gc(c.At, fx)
	case KindDrain:
		e.drain(c.At, fx)
	case KindAdvance:
		e.advance(c.At, fx)
	case KindTaggedAcquire:
		return e.acquireTagged(e.mustSession(c.Session), c, fx)
	case KindOwnRelease:
		return e.releaseOwn(e.mustSession(c.Session), c, fx)
	case KindFenceRenew:
		return e.renewFence(e.mustSession(c.Session), c, fx)
	case KindHolder:
		return e.holderFence(c, fx)
	case KindCancel:
		s := e.mustSession(c.Session)
		r := e.cancel(s, c.Tag, c.At, fx)
		if r.Int == 1 {
			e.runQueue(s, c.At, fx) // withdrawn: what it held back runs now
		}
		return r
	case KindForceRelease:
		return e.forceRelease(c, fx)
	case KindDetach:
		s := e.mustSession(c.Session)
		s.queue, s.waits = nil, false
		e.detachConn(s)
	default:
		panic("engine: Apply of an unknown command kind")
	}
	return status(vocab.StatusOK)
}

// request runs a dflockd protocol request into *out.
func (e *Engine) request(c *Command, fx *Effects, out *Result) {
	r, now := &c.Req, c.At
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
	case vocab.OpLock, vocab.OpSemLock, vocab.OpReadLock, vocab.OpWriteLock:
		if c.Readopt {
			if res, ok := e.readopt(e.mustSession(c.Session), ns, r.Key, m, r.Timeout*1000, now, fx); ok {
				*out = res
				return
			}
		}
		e.acquire(e.mustSession(c.Session), ns, r.Key, m, r.Timeout*1000, e.leaseMs(r.Lease), now, fx, out)
	case vocab.OpRelease, vocab.OpSemRelease, vocab.OpReadRelease, vocab.OpWriteRelease:
		e.release(ns, r.Key, r.Token, now, fx, out)
	case vocab.OpRenew, vocab.OpSemRenew, vocab.OpReadRenew, vocab.OpWriteRenew:
		*out = e.renew(ns, r.Key, r.Token, e.leaseMs(r.Lease), now, fx)
	case vocab.OpEnqueue, vocab.OpSemEnqueue, vocab.OpReadEnqueue, vocab.OpWriteEnqueue:
		*out = e.enqueue(e.mustSession(c.Session), ns, r.Key, m, e.leaseMs(r.Lease), now, fx)
	case vocab.OpWait, vocab.OpSemWait, vocab.OpReadWait, vocab.OpWriteWait:
		*out = e.wait(e.mustSession(c.Session), ns, r.Key, r.Timeout*1000, now, fx)
	case vocab.OpIncr, vocab.OpDecr, vocab.OpGet, vocab.OpCSet:
		*out = e.counterOp(c.Session, r, now, fx)
	case vocab.OpKSet, vocab.OpKGet, vocab.OpKDel, vocab.OpKCAS:
		*out = e.kvOp(c.Session, r, now, fx)
	case vocab.OpLPush, vocab.OpRPush, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpLRange,
		vocab.OpBLPop, vocab.OpBRPop:
		*out = e.listOp(c.Session, r, now, fx)
	case vocab.OpListen, vocab.OpUnlisten, vocab.OpSignal:
		*out = e.pubsubOp(c.Session, r, fx)
	case vocab.OpWatch, vocab.OpUnwatch:
		*out = e.watchOp(c.Session, r)
	case vocab.OpBWait:
		*out = e.bwait(e.mustSession(c.Session), r, now, fx)
	case vocab.OpElect:
		e.acquire(e.mustSession(c.Session), nsLock, r.Key, mode{limit: 1, elect: true},
			r.Timeout*1000, e.leaseMs(r.Lease), now, fx, out)
	case vocab.OpResign:
		*out = e.resign(r.Key, r.Token, now, fx)
	case vocab.OpObserve:
		*out = e.observe(e.mustSession(c.Session), r.Key, now, fx)
	case vocab.OpUnobserve:
		*out = e.unobserve(e.mustSession(c.Session), r.Key, fx)
	case vocab.OpStats:
		*out = Result{Status: vocab.StatusOK, Kind: KindStats}
	case vocab.OpBarrier:
		// Reached in its turn: everything before it has applied.
		*out = status(vocab.StatusOK)
	case vocab.OpStableRef:
		// The ref is the caller's to keep (a cluster's orphans): the
		// answer hands it back, in the request's turn.
		*out = Result{Status: vocab.StatusOK, Kind: KindStableRef, Value: string(r.Token)}
	default:
		panic("engine: Apply of a request with unsupported op " + r.Op.String())
	}
}

// Sessions returns the number of open sessions.
func (e *Engine) Sessions() int { return e.sessions.count() }
