package fence

import (
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultWindow is how many fences one persisted ceiling reserves: dflockd's
// rangeSize (2^20), so a restart skips at most this many values and a busy
// server persists about once per million grants.
const DefaultWindow = 1 << 20

// Errors. Operational failures wrap one of these; match with errors.Is.
var (
	// ErrCorrupt: the state file has an illegal size or no valid record.
	// Open refuses it rather than guess a ceiling it cannot prove.
	ErrCorrupt = errors.New("fence: state file corrupt")
	// ErrLocked: another process (normally another dflockd) holds the
	// state file's flock.
	ErrLocked = errors.New("fence: state file in use")
	// ErrPersist: writing a new ceiling failed. Fence issuance stops for
	// good: after a failed msync the kernel may already have dropped the
	// dirty page (fsyncgate), so a retry proves nothing.
	ErrPersist = errors.New("fence: persisting the fence ceiling failed")
	// ErrExhausted: the counter reached 2^64−1; it never wraps.
	ErrExhausted = errors.New("fence: counter exhausted at 2^64-1")
	// ErrClosed: Next after Close.
	ErrClosed = errors.New("fence: allocator closed")
	// ErrUnsupported: durable state files need Linux (mmap, flock, msync).
	ErrUnsupported = errors.New("fence: state file not supported on this platform")
)

// Options tunes Open. The zero value means the defaults.
type Options struct {
	// Window is the number of fences each persisted ceiling reserves
	// ahead of the counter; 0 means DefaultWindow, 1 is refused (a
	// ceiling one above the seed leaves no fence to issue). Tests use
	// small ones to re-reserve often.
	Window uint64
	// Logf receives the one loud message about a persist failure and
	// warnings about unsafe filesystems; nil means log.Printf.
	Logf func(format string, args ...any)
	// Now is the wall clock that floors the seed; nil means time.Now.
	// Tests fake clocks far in the past or future.
	Now func() time.Time

	// msync flushes the mapped state file; nil means msync(MS_SYNC).
	// Tests inject failures here.
	msync func(b []byte) error
}

func (o Options) withDefaults() Options {
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Stats is a snapshot of an Allocator.
type Stats struct {
	// Last is the highest fence issued so far (the seed when none has
	// been). While Next calls are stalled or failing it is an upper bound.
	Last uint64
	// Seed is where this incarnation started: the first fence is Seed+1.
	Seed uint64
	// Ceiling is the durable ceiling: every fence issued is below it.
	// 2^64−1 for a volatile allocator.
	Ceiling uint64
	// Seq is the sequence number of the newest journal record (0 if volatile).
	Seq    uint64
	Window uint64
	// Persists counts ceilings made durable, including the one Open writes.
	Persists uint64
	// Stalls counts Next calls that had to wait for a persist.
	Stalls uint64
	// LastPersist and MaxPersist time the persister's writes (store +
	// msync); Open's own reservation (pwrite, fsyncs) is not included.
	LastPersist time.Duration
	MaxPersist  time.Duration
	Durable     bool // backed by a state file
	Failed      bool // a persist failed; Next returns ErrPersist forever
	Closed      bool
}

// Allocator hands out strictly increasing fences. It is safe for
// concurrent use.
type Allocator struct {
	_ [64]byte // keep the hot line below clear of whatever precedes us
	// The hot line: every Next reads or writes these three.
	ctr  atomic.Uint64 // last value the add handed out; runs ahead of issued fences while Next stalls or fails
	trig atomic.Uint64 // below it Next returns at once; always ≤ ceil: ceil−W/2, ceil while a persist is in flight, lo once stopped
	lo   uint64        // seed+1, the first fence of this incarnation; immutable
	_    [40]byte

	ceil     atomic.Uint64 // durable ceiling (exclusive); only the persister raises it
	seq      atomic.Uint64 // newest durable record; written by the persister
	failed   atomic.Pointer[error]
	closed   atomic.Bool
	stalls   atomic.Uint64
	persists atomic.Uint64
	lastDur  atomic.Int64
	maxDur   atomic.Int64

	seed    uint64
	window  uint64
	durable bool
	path    string
	logf    func(format string, args ...any)
	file    *stateFile // nil when volatile; after Open only the persister writes it

	poke chan struct{} // capacity 1: "the counter crossed the trigger"
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the persister exits

	// mu is a leaf lock; it only pairs cond with the ceiling so that a
	// stalled Next cannot miss the broadcast of a new ceiling.
	mu   sync.Mutex
	cond sync.Cond

	closeOnce sync.Once
	closeErr  error
}

// NewVolatile returns an allocator seeded with the wall clock
// (time.Now().UnixNano()), as dflockd does without --fence-state-file. It
// never touches the disk, so it is monotonic across restarts only while
// the clock does not step back.
func NewVolatile() *Allocator { return newVolatile(clockSeed(time.Now())) }

// newVolatile starts after seed, which must be below 2^64−2.
func newVolatile(seed uint64) *Allocator {
	a := &Allocator{lo: seed + 1, seed: seed, logf: log.Printf}
	a.ctr.Store(seed)
	a.ceil.Store(maxFence)
	a.trig.Store(maxFence)
	a.cond.L = &a.mu
	return a
}

// Open returns an allocator backed by the dflockd fence state file at path
// (created 0600 if missing). It takes the file's flock, recovers the
// ceiling of the previous incarnation, seeds at max(that, wall clock), and
// durably reserves the first window before returning, so the first fence
// is already strictly above anything ever issued from this file.
func Open(path string, opts Options) (*Allocator, error) {
	opts = opts.withDefaults()
	if opts.Window < 2 {
		return nil, fmt.Errorf("fence: window %d too small for %s: need at least 2", opts.Window, path)
	}
	f, st, err := openStateFile(path, opts)
	if err != nil {
		return nil, err
	}
	if st.newest.seq >= maxFence-2 {
		f.close() // a wrapped seq would make our records look older than this one
		return nil, fmt.Errorf("%w: record sequence %d exhausted (state file %s)", ErrCorrupt, st.newest.seq, path)
	}
	seed := max(st.ceiling, clockSeed(opts.Now()))
	first := record{seq: st.nextSeq(), ceiling: addSat(seed, opts.Window)}
	if seed >= first.ceiling-1 {
		f.close()
		return nil, fmt.Errorf("%w: %s: recovered ceiling %d leaves no fence below 2^64-1", ErrExhausted, path, seed)
	}
	if err := f.start(first); err != nil {
		f.close()
		return nil, err
	}
	a := &Allocator{
		lo:      seed + 1,
		seed:    seed,
		window:  opts.Window,
		durable: true,
		path:    path,
		logf:    opts.Logf,
		file:    f,
		poke:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	a.cond.L = &a.mu
	a.ctr.Store(seed)
	a.notePersisted(first, 0)
	go a.run()
	return a, nil
}

// Next returns a fence strictly greater than every fence this allocator
// (and, when durable, every earlier incarnation on the same file) issued.
// It fails after a persist failure (ErrPersist, forever), after Close
// (ErrClosed) and at 2^64−1 (ErrExhausted).
func (a *Allocator) Next() (uint64, error) {
	v := a.ctr.Add(1)
	if err := a.Reserve(v); err != nil {
		return 0, err
	}
	return v, nil
}

// Seed returns the floor of this incarnation: every fence handed out is
// above it, the first one is Seed()+1.
func (a *Allocator) Seed() uint64 { return a.seed }

// Reserve makes fence v usable by a counter kept elsewhere (the engine's,
// which counts up from Seed()+1): it returns once v is below the durable
// ceiling, persisting the next window ahead when v passes the trigger, or
// an error when v can never be issued (persistence failed, the allocator
// is closed, the counter is exhausted). Safe from any goroutine; the fast
// path is two atomic loads.
func (a *Allocator) Reserve(v uint64) error {
	// lo ≤ v < trig in one unsigned compare; a wrapped counter (v < lo)
	// and a stopped allocator (trig = lo) both fall through.
	if v-a.lo < a.trig.Load()-a.lo {
		return nil
	}
	a.noteIssued(v)
	_, err := a.nextSlow(v)
	return err
}

// noteIssued raises ctr to v, which the persister reserves from, when the
// counter is the caller's: only on the slow path, so the fast path stays
// free of writes (Stats().Last then lags; the caller knows the truth).
func (a *Allocator) noteIssued(v uint64) {
	for {
		c := a.ctr.Load()
		if v <= c || a.ctr.CompareAndSwap(c, v) {
			return
		}
	}
}

func (a *Allocator) nextSlow(v uint64) (uint64, error) {
	if err := a.stopped(); err != nil {
		return 0, err
	}
	if v < a.lo || v == maxFence {
		return 0, ErrExhausted
	}
	if v < a.ceil.Load() {
		a.wake() // past the trigger: reserve the next window now
		return v, nil
	}
	return a.stall(v)
}

// stall waits until a persist covers v; a burst outran the persister.
// The persister reserves from the counter's value when it starts, which
// is ≥ v, so one persist after our wake-up suffices.
func (a *Allocator) stall(v uint64) (uint64, error) {
	a.stalls.Add(1)
	a.mu.Lock()
	defer a.mu.Unlock()
	for {
		if err := a.stopped(); err != nil {
			return 0, err
		}
		if v < a.ceil.Load() {
			return v, nil
		}
		a.wake()
		a.cond.Wait()
	}
}

// stopped reports why Next may not issue anything any more.
func (a *Allocator) stopped() error {
	if e := a.failed.Load(); e != nil {
		return *e
	}
	if a.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Close stops the persister (a persist in flight completes; nothing more
// is written), then releases the flock and unmaps and closes the file.
// Next fails with ErrClosed afterwards. Close is idempotent.
func (a *Allocator) Close() error {
	a.closeOnce.Do(func() {
		a.closed.Store(true)
		if a.stop != nil {
			close(a.stop)
			<-a.done
		}
		// The persister is gone, so nothing can raise trig again.
		a.trig.Store(a.lo)
		a.broadcast()
		if a.file != nil {
			a.closeErr = a.file.close()
		}
	})
	return a.closeErr
}

// Stats returns a snapshot; fields are read independently.
func (a *Allocator) Stats() Stats {
	c := a.ceil.Load()
	last := a.ctr.Load()
	switch {
	case last < a.seed: // wrapped past 2^64−1
		last = c - 1
	case last >= c:
		last = c - 1
	}
	return Stats{
		Last:        last,
		Seed:        a.seed,
		Ceiling:     c,
		Seq:         a.seq.Load(),
		Window:      a.window,
		Persists:    a.persists.Load(),
		Stalls:      a.stalls.Load(),
		LastPersist: time.Duration(a.lastDur.Load()),
		MaxPersist:  time.Duration(a.maxDur.Load()),
		Durable:     a.durable,
		Failed:      a.failed.Load() != nil,
		Closed:      a.closed.Load(),
	}
}

// clockSeed is the wall clock as a fence floor; clocks before 1970 count as 0.
func clockSeed(t time.Time) uint64 {
	return uint64(max(t.UnixNano(), 0))
}
