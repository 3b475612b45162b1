package loadgen

// opKind is the operation a slot performs in its current cycle.
type opKind uint8

const (
	opLock opKind = iota // acquire+release of the slot's own key
	opHot                // acquire+release of the one shared hot key
	opSem                // semaphore acquire+release
	opTry                // try-acquire (timeout 0) of a shared key, release if granted
)

// stage is which request of the cycle a slot has in flight.
type stage uint8

const (
	stageAcquire stage = iota
	stageRelease
)

// The primitive workloads' cycles are a write (incr, kset, rpush) and, for
// kv and list, its read-back (kget, lpop).
const (
	stageWrite = stageAcquire
	stageRead  = stageRelease
)

// outcome is what a reply did to its slot's cycle.
type outcome uint8

const (
	cycleContinues outcome = iota // the next request of the cycle was appended
	cyclePair                     // acquire and release both succeeded
	cycleMiss                     // a try-acquire was refused: a valid outcome
)

// tokenLen is the length of a dflockd token and of the Redis lock values
// this package generates: 32 lowercase hex digits.
const tokenLen = 32

// A slot is one independent acquire/release cycle on a connection. A
// connection has Depth slots, each with at most one request in flight, so
// Depth requests are in flight in total.
type slot struct {
	op      opKind
	stage   stage
	tryOnly bool           // the pending acquire has timeout 0: a miss is valid
	timeout int64          // timeout (s) of the pending acquire, for error messages
	fresh   bool           // the appended request starts a cycle: opStart is set at flush
	key     []byte         // key of the current cycle (shared or ownKey)
	ownKey  []byte         // key no other slot uses
	value   []byte         // Redis: this slot's lock value (tokenLen hex digits); primitives: its random half
	token   [tokenLen]byte // the granted token; primitives: the current cycle's value
	sentAt  int64          // run clock when the pending request was written
	opStart int64          // run clock when the cycle's first request was written
	rng     uint64
	conn    int // for error messages
	idx     int

	// Primitive workloads: the slot's own keys, the one in use, and what
	// each counter answered last (keys are fresh per run, so counters start
	// at 0).
	keys   [][]byte
	kidx   int
	counts []int64
	cycle  uint64 // cycles begun; part of every kv and list value
}

// next returns the slot's next pseudo-random number (xorshift64*): cheap,
// allocation-free, and deterministic per slot so runs are repeatable.
func (s *slot) next() uint64 {
	x := s.rng
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	s.rng = x
	return x * 0x2545F4914F6CDD1D
}

// splitmix64 spreads a seed so neighbouring slots get unrelated sequences.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// script drives slots through the cycles of one workload on one protocol.
// Implementations are read-only after construction and shared by all
// connections of a run.
type script interface {
	// begin picks the slot's next cycle and appends its first request.
	begin(s *slot, dst []byte) []byte
	// handle validates r as the reply to the slot's pending request. When the
	// cycle goes on, it appends the next request and returns cycleContinues.
	handle(s *slot, r Reply, dst []byte) ([]byte, outcome, error)
	// describe names the slot's pending request, for error messages.
	describe(s *slot) string
}

func newScript(c Config) script {
	if c.Workload.Primitive() {
		return newPrimScript(c)
	}
	if c.Proto == ProtoRedis {
		return newRedisScript(c)
	}
	return newLineScript(c)
}
