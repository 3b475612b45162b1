package baseline

import (
	"crypto/rand"
	"encoding/hex"
)

// tokenBatch is how many random bytes are fetched at once; dflockd v1.10+
// buffers 4 096 bytes and hands out 16 at a time, amortising the syscall.
const tokenBatch = 4096

// tokenSource mints 32-hex-digit tokens. Not safe for concurrent use: the
// table calls it under its mutex.
type tokenSource struct {
	buf [tokenBatch]byte
	off int
}

func newTokenSource() *tokenSource { return &tokenSource{off: tokenBatch} }

func (ts *tokenSource) next() string {
	if ts.off+16 > len(ts.buf) {
		if _, err := rand.Read(ts.buf[:]); err != nil {
			// crypto/rand does not fail on Linux ≥ 3.17; if it ever does, a
			// lock server must not hand out guessable tokens.
			panic("baseline: crypto/rand: " + err.Error())
		}
		ts.off = 0
	}
	var out [32]byte
	hex.Encode(out[:], ts.buf[ts.off:ts.off+16])
	ts.off += 16
	return string(out[:])
}
