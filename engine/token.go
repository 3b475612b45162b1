package engine

import (
	"encoding/binary"
	"math"

	"github.com/dchest/siphash"

	"github.com/dflockd-ng/dflockd/fence"
)

// Fences and tokens. The fence counter is engine state: each grant takes
// the next value, so an engine fed the same commands issues the same
// fences. Single node, a durable ceiling (fence.Allocator with
// --fence-state-file) must be reserved ahead of every value issued, and
// the counter starts at the floor the caller recovered; in a cluster the
// counter is replicated state and needs no ceiling.
//
// A token is the fence and a salt that makes it unguessable. The salt is
// not stored and not drawn per grant: it is a keyed pseudo-random function
// (SipHash-2-4) of the fence under a 128-bit key the caller chose at random
// once. Knowing tokens does not help to compute another fence's salt
// without the key; every replica holding the key computes the same
// tokens; and a held slot needs no room for one.

// FenceCeiling guards a durable fence ceiling: Reserve returns once fence
// v is below a ceiling that is on disk, or an error when it never will be
// (persistence failed). Called with a shard lock held: the fast path must
// be a few atomic loads (fence.Allocator).
type FenceCeiling interface {
	Reserve(v uint64) error
}

// TokenKey is the secret of the token salts.
type TokenKey [16]byte

// nextFence takes the next fence, or reports that none can be issued.
func (e *Engine) nextFence() (uint64, bool) {
	v := e.fence.Add(1)
	if v == 0 || v == math.MaxUint64 {
		e.fence.Store(math.MaxUint64) // stays exhausted (spec §C.2: no wrap)
		return 0, false
	}
	if e.cfg.Ceiling != nil {
		if err := e.cfg.Ceiling.Reserve(v); err != nil {
			return 0, false
		}
	}
	return v, true
}

// LastFence returns the last fence issued.
func (e *Engine) LastFence() uint64 { return e.fence.Load() }

// token returns the token of fence f.
func (e *Engine) token(f uint64) fence.Token { return fence.Token{Fence: f, Salt: e.salt(f)} }

// salt is the keyed PRF of a fence.
func (e *Engine) salt(f uint64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], f)
	return siphash.Hash(e.k0, e.k1, b[:])
}

// validToken reports whether t is the token of its fence.
func (e *Engine) validToken(t fence.Token) bool { return t.Salt == e.salt(t.Fence) }

// Token returns the token of the grant that took fence f: what a grant
// reply carries. (Tests and tools predict tokens with it.)
func (e *Engine) Token(f uint64) fence.Token { return e.token(f) }

// RaiseFence makes every fence issued from now on above floor: the
// counter becomes max(its value, floor). A cluster raises it on every
// replica alike, from a log entry, after restoring a backup (the fences
// the backup's source issued after it was taken are below floor). It
// reports whether the counter moved.
func (e *Engine) RaiseFence(floor uint64) bool {
	for {
		v := e.fence.Load()
		if v >= floor {
			return false
		}
		if e.fence.CompareAndSwap(v, floor) {
			return true
		}
	}
}
