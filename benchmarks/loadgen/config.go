package loadgen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Protocol is the wire protocol a target speaks.
type Protocol uint8

// Protocols.
const (
	ProtoLine  Protocol = iota // dflockd: 3-line requests, one-line replies
	ProtoRedis                 // Redis RESP2
)

func (p Protocol) String() string {
	if p == ProtoRedis {
		return "redis"
	}
	return "dflockd"
}

// Workload names what each slot does in a cycle.
type Workload string

// Workloads. The comments give the dflockd requests; Redis equivalents are
// noted where they exist.
const (
	// Lock: l + r on keys owned by one slot, so nothing contends. Redis:
	// SET key val NX PX + DEL (or compare-and-delete, see RedisRelease).
	Lock Workload = "lock"
	// Hot: every connection queues on one key with a long timeout (FIFO
	// hand-off). Needs Depth 1. No Redis equivalent.
	Hot Workload = "hot"
	// Sem: sl + sr on one semaphore of SemLimit permits. Needs Depth 1.
	// No Redis equivalent.
	Sem Workload = "sem"
	// Try: l key 0 (try-lock) on TryKeys shared keys; "timeout" is a valid
	// outcome (a miss), a grant is followed by r. Redis: SET NX, where nil
	// is the miss.
	Try Workload = "try"
	// Mixed: each cycle picks lock (50 %), try (25 %), sem (15 %) or hot
	// (10 %); with Depth > 1, sem and hot acquire with timeout 0 so that no
	// request blocks the pipeline. Redis: lock 70 %, try 30 %.
	Mixed Workload = "mixed"

	// The primitive workloads of dflockd's redis-feats line. Each slot
	// cycles through KeysPerSlot keys of its own, so no key is hot and every
	// reply has one right answer.

	// Incr: incr key 1 → "ok <n>", which must be the key's previous value
	// plus one (1 on the first). Redis: INCR.
	Incr Workload = "incr"
	// KV: kset key value → "ok", then kget key → "ok <value>" with the value
	// just set (a fresh one every cycle). Redis: SET then GET.
	KV Workload = "kv"
	// List: rpush key value → "ok 1" (the slot's lists are empty between
	// cycles), then lpop key → "ok <value>". Redis: RPUSH then LPOP.
	List Workload = "list"
)

// Workloads lists the workload names in display order.
var Workloads = []Workload{Lock, Hot, Sem, Try, Mixed, Incr, KV, List}

// Primitive reports whether w is one of the redis-feats primitive workloads
// (counters, KV, lists), whose cycles are not acquire+release pairs: one
// request (incr) or a write and its read-back (kv, list).
func (w Workload) Primitive() bool { return w == Incr || w == KV || w == List }

// RedisRelease says how a Redis lock is released.
type RedisRelease string

// Redis release variants.
const (
	// ReleaseCAS deletes the key only if it still holds this client's value
	// (EVAL of a GET-compare-DEL script): the safe way, comparable to a
	// token-checked dflockd release.
	ReleaseCAS RedisRelease = "cas"
	// ReleaseDel is a plain DEL: cheaper, unsafe after a lease expiry.
	ReleaseDel RedisRelease = "del"
)

// Config describes one run against one target. The zero value of every
// optional field means its default, filled in by Run.
type Config struct {
	Name  string   // label used in results and errors; default Addr
	Addr  string   // host:port, loopback only
	Proto Protocol // wire protocol

	Workload Workload // default Lock
	Conns    int      // connections; default 1
	Depth    int      // requests in flight per connection; default 1

	Warmup   time.Duration // excluded from the measurement; default 1 s
	Duration time.Duration // measured window; default 5 s

	Lease        int          // lease in seconds sent with every acquire; default 30
	SemLimit     int          // permits of the Sem workload's semaphore; default 8
	TryKeys      int          // shared keys of the Try workload; default 4
	KeyPrefix    string       // prefix of every key (Redis and primitives: plus a per-run suffix); default "bench"
	KeysPerSlot  int          // primitive workloads: keys each slot cycles through; default 8
	RedisRelease RedisRelease // default ReleaseCAS

	DialTimeout time.Duration // per connection, TLS handshake included; default 5 s
	// TLS, if set, makes every connection a TLS client with this config:
	// a CA to trust (RootCAs) or InsecureSkipVerify; an empty ServerName
	// is the host of Addr. The handshakes happen while dialing, before the
	// warm-up, so the window measures requests over established sessions,
	// as a client with long-lived connections sees them.
	TLS *tls.Config
	// Tokens, if set, make connection i authenticate first, right after
	// dialing and before the warm-up, with auth _ Tokens[i%len(Tokens)]:
	// against a server with a policy file, each token is an identity, so
	// one token per connection makes every connection its own identity.
	// The reply must be "ok". The line protocol only.
	Tokens []string

	// OnWindowStart and OnWindowEnd, when set, are called (from a goroutine
	// of Run) as the measured window opens and closes, e.g. to sample the
	// server's CPU time. OnWindowEnd is not called if the run fails first.
	OnWindowStart func()
	OnWindowEnd   func()
}

// Limits on a run. They keep a mistyped flag from exhausting the machine.
const (
	maxConns    = 1 << 16 // one client process cannot open more loopback sockets anyway
	maxDepth    = 4096    // far beyond any useful pipeline; bounds per-conn buffers
	maxDuration = time.Hour
	maxKeyLen   = 200  // dflockd caps a line at 256 bytes; leave room for the slot suffix
	maxSlotKeys = 1024 // conns × depth × this keys are created per run
	maxTokenLen = 4096 // an auth line is one read; dflockd takes up to 64 KiB
)

func (c Config) withDefaults() Config {
	if c.Name == "" {
		c.Name = c.Addr
	}
	if c.Workload == "" {
		c.Workload = Lock
	}
	if c.Conns == 0 {
		c.Conns = 1
	}
	if c.Depth == 0 {
		c.Depth = 1
	}
	if c.Warmup == 0 {
		c.Warmup = time.Second
	}
	if c.Duration == 0 {
		c.Duration = 5 * time.Second
	}
	if c.Lease == 0 {
		c.Lease = 30
	}
	if c.SemLimit == 0 {
		c.SemLimit = 8
	}
	if c.TryKeys == 0 {
		c.TryKeys = 4
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "bench"
	}
	if c.KeysPerSlot == 0 {
		c.KeysPerSlot = 8
	}
	if c.RedisRelease == "" {
		c.RedisRelease = ReleaseCAS
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	return c
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("loadgen: bad config")

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, c.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Addr == "":
		return bad("no address")
	case c.Conns < 1 || c.Conns > maxConns:
		return bad("conns %d out of [1, %d]", c.Conns, maxConns)
	case c.Depth < 1 || c.Depth > maxDepth:
		return bad("depth %d out of [1, %d]", c.Depth, maxDepth)
	case c.Warmup < 0 || c.Duration <= 0 || c.Warmup+c.Duration > maxDuration:
		return bad("warmup %v + duration %v must be positive and at most %v", c.Warmup, c.Duration, maxDuration)
	case c.Lease < 1:
		return bad("lease %d s must be ≥ 1", c.Lease)
	case c.SemLimit < 1:
		return bad("semaphore limit %d must be ≥ 1", c.SemLimit)
	case c.TryKeys < 1:
		return bad("try keys %d must be ≥ 1", c.TryKeys)
	case len(c.KeyPrefix) > maxKeyLen || strings.ContainsAny(c.KeyPrefix, " \t\r\n"):
		return bad("key prefix %q must be at most %d bytes without white space", c.KeyPrefix, maxKeyLen)
	case c.RedisRelease != ReleaseCAS && c.RedisRelease != ReleaseDel:
		return bad("redis release %q is neither %q nor %q", c.RedisRelease, ReleaseCAS, ReleaseDel)
	case c.KeysPerSlot < 1 || c.KeysPerSlot > maxSlotKeys:
		return bad("keys per slot %d out of [1, %d]", c.KeysPerSlot, maxSlotKeys)
	case len(c.Tokens) > 0 && c.Proto != ProtoLine:
		return bad("tokens (auth) need the dflockd line protocol")
	}
	for i, tok := range c.Tokens {
		if tok == "" || len(tok) > maxTokenLen || strings.ContainsAny(tok, "\r\n") {
			return bad("token %d must be 1 to %d bytes without a line break", i, maxTokenLen)
		}
	}
	switch c.Workload {
	case Lock, Try, Mixed, Incr, KV, List:
	case Hot, Sem:
		if c.Proto == ProtoRedis {
			return bad("workload %s has no Redis equivalent", c.Workload)
		}
		// dflockd serves a connection sequentially: a blocked acquire holds
		// back the release pipelined behind it, which may be the very release
		// the acquire waits for.
		if c.Depth != 1 {
			return bad("workload %s blocks on a shared key and needs depth 1, not %d", c.Workload, c.Depth)
		}
	default:
		return bad("unknown workload %q (want one of %v)", c.Workload, Workloads)
	}
	return nil
}
