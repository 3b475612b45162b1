package vocab

// Op identifies a command. Its name and the profiles that know it are in
// the command table (commands.go).
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

	// Primitives of dflockd's redis-feats line (spec §B.4–B.12). They
	// work in every profile but v1.
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

func (o Op) String() string { return commands[o].name }

// Semaphore reports whether o addresses the semaphore namespace.
func (o Op) Semaphore() bool { return o >= OpSemLock && o <= OpSemWait }

// ReadWrite reports whether o is a read-write lock command.
func (o Op) ReadWrite() bool { return o >= OpReadLock && o <= OpWriteWait }

// Writer reports whether a read-write lock command takes the write side.
func (o Op) Writer() bool {
	switch o {
	case OpWriteLock, OpWriteRelease, OpWriteRenew, OpWriteEnqueue, OpWriteWait:
		return true
	}
	return false
}
