package vocab

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

// Request is a parsed request. Byte slices may alias the input the request
// was parsed from (see package parse): whoever keeps one past the request
// copies it. Seconds are whole seconds; Lease 0 means "the server default".
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
