package owed

import (
	"strconv"
	"testing"
)

// BenchmarkQueue is one owed answer's round trip through the queue
// (Reserve, Fill, Next) behind depth-1 others: a single node's session
// (depth 1) and a cluster member's pipeline at maxOwed (128).
func BenchmarkQueue(b *testing.B) {
	for _, depth := range []int{1, 128} {
		b.Run("depth-"+strconv.Itoa(depth), func(b *testing.B) {
			var q Queue[[7]uint64] // the size of session's owedRequest
			for range depth - 1 {
				q.Reserve([7]uint64{})
			}
			b.ReportAllocs()
			for b.Loop() {
				q.Reserve([7]uint64{1})
				q.Fill()
				q.Next() // the oldest leaves; depth-1 stay open behind it
			}
		})
	}
}
