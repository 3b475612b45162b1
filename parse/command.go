package parse

import "errors"

// Op identifies a command of the v2 protocol.
type Op uint8

const (
	OpUnknown    Op = iota
	OpLock          // l: acquire a lock, blocking up to a timeout
	OpRelease       // r
	OpRenew         // n
	OpEnqueue       // e: two-phase acquire, phase 1
	OpWait          // w: two-phase acquire, phase 2
	OpSemLock       // sl
	OpSemRelease    // sr
	OpSemRenew      // sn
	OpSemEnqueue    // se
	OpSemWait       // sw
	OpAuth
	OpPing
	OpStats
	OpBarrier   // V2C linearizable-read barrier: a no-op "ok" on a single node
	OpStableRef // V2C connection identity: accepted, inert on a single node

	// Primitives of dflockd's redis-feats line (spec §B.4–B.12); parsed by
	// rf.go. They work in every profile.
	OpReadLock     // rl
	OpWriteLock    // wl
	OpReadRelease  // rr
	OpWriteRelease // wr
	OpReadRenew    // rn
	OpWriteRenew   // wn
	OpReadEnqueue  // re
	OpWriteEnqueue // we
	OpReadWait     // rw
	OpWriteWait    // ww
	OpIncr
	OpDecr
	OpGet
	OpCSet
	OpKSet
	OpKGet
	OpKDel
	OpKCAS
	OpLPush
	OpRPush
	OpLPop
	OpRPop
	OpLLen
	OpLRange
	OpBLPop
	OpBRPop
	OpListen
	OpUnlisten
	OpSignal
	OpWatch
	OpUnwatch
	OpBWait
	OpElect
	OpResign
	OpObserve
	OpUnobserve
	numOps
)

// NumOps bounds the Op values, for tables indexed by Op.
const NumOps = int(numOps)

var opNames = [numOps]string{
	OpUnknown: "?", OpLock: "l", OpRelease: "r", OpRenew: "n", OpEnqueue: "e", OpWait: "w",
	OpSemLock: "sl", OpSemRelease: "sr", OpSemRenew: "sn", OpSemEnqueue: "se", OpSemWait: "sw",
	OpAuth: "auth", OpPing: "ping", OpStats: "stats", OpBarrier: "barrier", OpStableRef: "stable-ref",
	OpReadLock: "rl", OpWriteLock: "wl", OpReadRelease: "rr", OpWriteRelease: "wr",
	OpReadRenew: "rn", OpWriteRenew: "wn", OpReadEnqueue: "re", OpWriteEnqueue: "we",
	OpReadWait: "rw", OpWriteWait: "ww",
	OpIncr: "incr", OpDecr: "decr", OpGet: "get", OpCSet: "cset",
	OpKSet: "kset", OpKGet: "kget", OpKDel: "kdel", OpKCAS: "kcas",
	OpLPush: "lpush", OpRPush: "rpush", OpLPop: "lpop", OpRPop: "rpop", OpLLen: "llen",
	OpLRange: "lrange", OpBLPop: "blpop", OpBRPop: "brpop",
	OpListen: "listen", OpUnlisten: "unlisten", OpSignal: "signal", OpWatch: "watch", OpUnwatch: "unwatch",
	OpBWait: "bwait", OpElect: "elect", OpResign: "resign", OpObserve: "observe", OpUnobserve: "unobserve",
}

func (o Op) String() string { return opNames[o] }

// Semaphore reports whether o addresses the semaphore namespace.
func (o Op) Semaphore() bool { return o >= OpSemLock && o <= OpSemWait }

// lookupOp maps a command line to its Op. The switch on string(cmd) does
// not allocate.
func lookupOp(cmd []byte) Op {
	switch string(cmd) {
	case "l":
		return OpLock
	case "r":
		return OpRelease
	case "n":
		return OpRenew
	case "e":
		return OpEnqueue
	case "w":
		return OpWait
	case "sl":
		return OpSemLock
	case "sr":
		return OpSemRelease
	case "sn":
		return OpSemRenew
	case "se":
		return OpSemEnqueue
	case "sw":
		return OpSemWait
	case "auth":
		return OpAuth
	case "ping":
		return OpPing
	case "stats":
		return OpStats
	case "barrier":
		return OpBarrier
	case "stable-ref":
		return OpStableRef
	}
	return lookupRFOp(cmd)
}

// Limits of argument values.
const (
	// MaxSeconds is the largest timeout or lease that fits a time.Duration;
	// larger values are invalid arguments (spec §I.2 O5).
	MaxSeconds = 9223372036
	// MaxLimit caps semaphore limits as dflockd's cluster line does (§I.36).
	MaxLimit = 1 << 20
	// MaxStableRef is the longest connection identity V2C accepts.
	MaxStableRef = 64
)

// Request is a parsed frame. Byte slices alias the input (see package doc).
// Seconds are whole seconds; Lease 0 means "the server default".
type Request struct {
	Op      Op
	Key     []byte
	Token   []byte // r, n, sr, sn, rr, wr, rn, wn, resign: trimmed token; auth: the secret; stable-ref: the ref
	Timeout int64  // l, w, sl, sw, rl, wl, rw, ww, blpop, brpop, bwait, elect
	Lease   int64  // l, n, e, sl, sn, se and their rw/elect twins; 0 = default
	Limit   int64  // sl, se
	// Value: kset value, kcas new value, push value, signal payload,
	// listen/unlisten group. Old: kcas expected value (empty = absent).
	Value, Old []byte
	N, M       int64 // incr/decr delta, cset value, lrange start/stop, bwait count
	TTL        int64 // kset, kcas: seconds, 0 = no expiry
}

// Errors returned by Parse. Each maps to the single wire word "error" and
// leaves the connection open (spec §A.5); the distinction is for logs and
// tests. The numbers are dflockd's internal codes.
var (
	ErrUnknownCommand = errors.New("parse: unknown command")             // 3
	ErrBadInteger     = errors.New("parse: invalid integer")             // 4
	ErrBadKey         = errors.New("parse: empty key or key with blank") // 5
	ErrNegativeTime   = errors.New("parse: negative timeout")            // 6
	ErrEmptyToken     = errors.New("parse: empty token")                 // 7
	ErrArgCount       = errors.New("parse: wrong argument count")        // 8
	ErrBadLease       = errors.New("parse: lease must be positive")      // 9
	ErrBadLimit       = errors.New("parse: limit out of range")          // 13
)

// Parse turns a frame into a Request. The validation order follows dflockd:
// command, then key (skipped by key-less commands), then arguments.
func Parse(f Frame) (Request, error) {
	r := Request{Op: lookupOp(f.Cmd)}
	switch r.Op {
	case OpUnknown:
		return r, ErrUnknownCommand
	case OpPing, OpStats, OpBarrier:
		return r, nil
	case OpAuth:
		r.Token = trimSpace(f.Arg)
		return r, nil
	case OpStableRef:
		return parseStableRef(r, f.Key)
	}
	if !validKey(f.Key) {
		return r, ErrBadKey
	}
	r.Key = f.Key
	if r.Op >= OpReadLock {
		return parseRF(r, f.Arg)
	}
	var fs [maxFields][]byte
	switch r.Op {
	case OpRelease, OpSemRelease:
		r.Token = trimSpace(f.Arg)
		if len(r.Token) == 0 {
			return r, ErrEmptyToken
		}
		return r, nil
	case OpRenew, OpSemRenew:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		r.Token = fs[0]
		return r, optLease(&r, fs[1], n == 2)
	case OpLock:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		if err := timeout(&r, fs[0]); err != nil {
			return r, err
		}
		return r, optLease(&r, fs[1], n == 2)
	case OpWait, OpSemWait:
		if fields(f.Arg, &fs) != 1 {
			return r, ErrArgCount
		}
		return r, timeout(&r, fs[0])
	case OpEnqueue:
		n := fields(f.Arg, &fs)
		if n > 1 {
			return r, ErrArgCount
		}
		return r, optLease(&r, fs[0], n == 1)
	case OpSemLock:
		n := fields(f.Arg, &fs)
		if n < 2 || n > 3 {
			return r, ErrArgCount
		}
		if err := timeout(&r, fs[0]); err != nil {
			return r, err
		}
		if err := limit(&r, fs[1]); err != nil {
			return r, err
		}
		return r, optLease(&r, fs[2], n == 3)
	case OpSemEnqueue:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		if err := limit(&r, fs[0]); err != nil {
			return r, err
		}
		return r, optLease(&r, fs[1], n == 2)
	}
	panic("parse: no grammar for op " + r.Op.String())
}

// validKey: non-empty, without ASCII space, TAB, CR or LF (spec §A.3).
// Other bytes, invalid UTF-8 and Unicode spaces included, are legal.
func validKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		switch c {
		case ' ', '\t', '\r', '\n':
			return false
		}
	}
	return true
}

func seconds(b []byte) (int64, error) {
	v, ok := atoi(b)
	if !ok || v > MaxSeconds {
		return 0, ErrBadInteger
	}
	return v, nil
}

func timeout(r *Request, b []byte) error {
	v, err := seconds(b)
	if err != nil {
		return err
	}
	if v < 0 {
		return ErrNegativeTime
	}
	r.Timeout = v
	return nil
}

func optLease(r *Request, b []byte, present bool) error {
	if !present {
		return nil
	}
	v, err := seconds(b)
	if err != nil {
		return err
	}
	if v <= 0 {
		return ErrBadLease
	}
	r.Lease = v
	return nil
}

func limit(r *Request, b []byte) error {
	v, ok := atoi(b)
	if !ok {
		return ErrBadInteger
	}
	if v <= 0 || v > MaxLimit {
		return ErrBadLimit
	}
	r.Limit = v
	return nil
}

// parseStableRef: the key line carries the ref, trimmed, 1–64 printable
// ASCII bytes (spec §A.3, §B.13).
func parseStableRef(r Request, key []byte) (Request, error) {
	ref := trimSpace(key)
	if len(ref) == 0 || len(ref) > MaxStableRef {
		return r, ErrArgCount
	}
	for _, c := range ref {
		if c < 0x20 || c > 0x7e {
			return r, ErrArgCount
		}
	}
	r.Token = ref
	return r, nil
}
