package fence

import (
	"crypto/rand"
	mrand "math/rand/v2"
)

// Salt is the CSPRNG source of the random half of tokens: a ChaCha8
// generator (cryptographically strong, per math/rand/v2) keyed once from
// crypto/rand. Refilling a buffer from the kernel instead cost ~10–35 µs
// every few hundred tokens on a VM, a latency spike on one grant in 256;
// ChaCha8 makes every salt cost a few nanoseconds.
//
// Salt is not safe for concurrent use: keep one per event loop or shard.
type Salt struct {
	g *mrand.ChaCha8
}

// NewSalt returns a Salt keyed from crypto/rand.
func NewSalt() *Salt {
	var seed [32]byte
	// crypto/rand.Read never fails since Go 1.24 (it crashes the program
	// rather than return predictable bytes); the check is for the record.
	if _, err := rand.Read(seed[:]); err != nil {
		panic("fence: crypto/rand failed: " + err.Error())
	}
	return &Salt{g: mrand.NewChaCha8(seed)}
}

// Next returns 64 fresh random bits.
func (s *Salt) Next() uint64 { return s.g.Uint64() }
