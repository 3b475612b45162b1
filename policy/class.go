package policy

import (
	"strings"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Class is a kind of command a permission grants.
type Class uint8

const (
	// Lock: acquire, release, renew, enqueue and wait, for locks,
	// semaphores, read-write locks and elections.
	Lock Class = iota
	// Read: get, kget, llen, lrange, watch of keys, observe of elections.
	Read
	// Write: counters, KV, lists, barriers.
	Write
	// Signal: publishing on a channel.
	Signal
	// Listen: subscribing to a channel pattern.
	Listen
	// Observe: what the observatory, /v1/keys, /v1/events and stats show
	// of a key.
	Observe
	// Admin: force release, membership, the policy itself.
	Admin
	// Metrics: GET /metrics.
	Metrics
	numClasses
)

// NumClasses bounds the Class values, for tables indexed by Class.
const NumClasses = int(numClasses)

// Classes is a set of classes, a bit each.
type Classes uint8

// AllClasses is every class: what "*" grants.
const AllClasses = Classes(1<<numClasses - 1)

// Has reports whether c is in cs.
func (cs Classes) Has(c Class) bool { return cs&(1<<c) != 0 }

var classNames = [numClasses]string{"lock", "read", "write", "signal", "listen", "observe", "admin", "metrics"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "?"
}

// ClassNamed returns the class a policy file names name, if any.
func ClassNamed(name string) (Class, bool) {
	for c, n := range classNames {
		if n == name {
			return Class(c), true
		}
	}
	return 0, false
}

// ClassNames lists the class names, for error messages and help.
func ClassNames() string { return strings.Join(classNames[:], ", ") }

// Checked is how a command is checked: the class it needs and whether its
// key is a pattern (watch and listen take NATS-style patterns: every key
// the pattern can match must be allowed).
type Checked struct {
	Class   Class
	Pattern bool
	// Keyless: the command names no key (stats); it needs the class on
	// some key, and what it shows is scoped by the caller.
	Keyless bool
}

// classOf is the check of each command; ok false means no check: the
// command touches no one's keys (auth, ping, barrier, stable-ref) or
// only undoes the caller's own subscription (unlisten, unwatch,
// unobserve: a connection that lost a permission may still drop what it
// had).
var classOf [vocab.NumOps]struct {
	Checked
	ok bool
}

func init() {
	set := func(c Class, pattern bool, ops ...vocab.Op) {
		for _, op := range ops {
			classOf[op].Checked = Checked{Class: c, Pattern: pattern}
			classOf[op].ok = true
		}
	}
	set(Lock, false, vocab.OpLock, vocab.OpRelease, vocab.OpRenew, vocab.OpEnqueue, vocab.OpWait,
		vocab.OpSemLock, vocab.OpSemRelease, vocab.OpSemRenew, vocab.OpSemEnqueue, vocab.OpSemWait,
		vocab.OpReadLock, vocab.OpWriteLock, vocab.OpReadRelease, vocab.OpWriteRelease,
		vocab.OpReadRenew, vocab.OpWriteRenew, vocab.OpReadEnqueue, vocab.OpWriteEnqueue,
		vocab.OpReadWait, vocab.OpWriteWait, vocab.OpElect, vocab.OpResign)
	set(Read, false, vocab.OpGet, vocab.OpKGet, vocab.OpLLen, vocab.OpLRange, vocab.OpObserve)
	set(Read, true, vocab.OpWatch)
	set(Write, false, vocab.OpIncr, vocab.OpDecr, vocab.OpCSet, vocab.OpKSet, vocab.OpKDel, vocab.OpKCAS,
		vocab.OpLPush, vocab.OpRPush, vocab.OpLPop, vocab.OpRPop, vocab.OpBLPop, vocab.OpBRPop, vocab.OpBWait)
	set(Signal, false, vocab.OpSignal)
	set(Listen, true, vocab.OpListen)
	set(Observe, false, vocab.OpStats)
	classOf[vocab.OpStats].Keyless = true
}

// CheckOf returns how op is checked; ok false: op needs no permission.
func CheckOf(op vocab.Op) (c Checked, ok bool) {
	e := classOf[op]
	return e.Checked, e.ok
}
