package netconn

import (
	"math/bits"
	"sync"
)

// Buffers of the read and write paths come from pools, by power-of-two
// size class, and go back as soon as their bytes are consumed or sent: an
// idle connection then holds only the small buffer its owner reads into,
// however big its last burst was, and a busy server reuses its buffers
// instead of allocating one per read or write.
const (
	minClass = 9  // 512 bytes: a read that waits for a request that may never come
	maxClass = 16 // 64 KiB: one read or write burst, as gnet's
	numClass = maxClass - minClass + 1
)

var pools [numClass]sync.Pool

// getBuf returns a buffer of length n's size class (n ≤ 64 KiB), at least
// n bytes.
func getBuf(n int) *[]byte {
	c := classOf(n)
	if p, ok := pools[c].Get().(*[]byte); ok {
		*p = (*p)[:cap(*p)]
		return p
	}
	b := make([]byte, 1<<(c+minClass))
	return &b
}

// putBuf returns a buffer to its pool; one that grew past 64 KiB (an
// append of a rare large reply) is left to the garbage collector.
func putBuf(p *[]byte) {
	n := cap(*p)
	if n < 1<<minClass || n > 1<<maxClass {
		return
	}
	c := classOf(n)
	if 1<<(c+minClass) != n {
		c-- // not a class size (grown by append): file it under the class it covers
	}
	*p = (*p)[:0]
	pools[c].Put(p)
}

// classOf is the index of the smallest class of at least n bytes.
func classOf(n int) int {
	if n <= 1<<minClass {
		return 0
	}
	return min(bits.Len(uint(n-1))-minClass, numClass-1)
}
