package fence

import (
	"crypto/rand"
	"encoding/binary"
)

// saltBuffer is how much crypto/rand output one refill fetches: one
// getrandom call per 512 salts instead of one per token.
const saltBuffer = 4096

// Salt is a buffered CSPRNG source for the random half of tokens. It is
// not safe for concurrent use: keep one per event loop or shard.
type Salt struct {
	off int // next unread byte of buf; len(buf) means empty
	buf [saltBuffer]byte
}

// NewSalt returns an empty Salt; the first Next fills it.
func NewSalt() *Salt { return &Salt{off: saltBuffer} }

// Next returns 64 fresh random bits.
func (s *Salt) Next() uint64 {
	if s.off > saltBuffer-8 {
		s.refill()
	}
	v := binary.LittleEndian.Uint64(s.buf[s.off:])
	s.off += 8
	return v
}

func (s *Salt) refill() {
	// crypto/rand.Read never fails since Go 1.24 (it crashes the program
	// rather than return predictable bytes); the check is for the record.
	if _, err := rand.Read(s.buf[:]); err != nil {
		panic("fence: crypto/rand failed: " + err.Error())
	}
	s.off = 0
}
