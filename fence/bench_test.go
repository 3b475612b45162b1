package fence

import (
	"math/bits"
	"path/filepath"
	"testing"
	"time"
)

// benchAllocator returns a volatile allocator, or one backed by a real
// file in b.TempDir() with the default window.
func benchAllocator(b *testing.B, durable bool) *Allocator {
	b.Helper()
	if !durable {
		return NewVolatile()
	}
	if !durableSupported {
		b.Skip("durable files need Linux")
	}
	return mustOpen(b, filepath.Join(b.TempDir(), "fence.state"), Options{Logf: b.Logf})
}

// reportPersists reports persists (one msync each) and stalls per million
// grants, excluding the reservation Open makes before the first grant,
// and the slowest persist (a stall means one outlasted W/2 grants).
func reportPersists(b *testing.B, a *Allocator, grants int) {
	st := a.Stats()
	if !st.Durable || grants == 0 {
		return
	}
	b.ReportMetric(float64(st.Persists-1)*1e6/float64(grants), "persists/Mgrant")
	b.ReportMetric(float64(st.Stalls)*1e6/float64(grants), "stalls/Mgrant")
	b.ReportMetric(float64(st.MaxPersist.Microseconds()), "max-persist-µs")
}

func BenchmarkNext(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := map[bool]string{false: "volatile", true: "durable"}[durable]
		b.Run(name, func(b *testing.B) {
			a := benchAllocator(b, durable)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Next(); err != nil {
					b.Fatal(err)
				}
			}
			reportPersists(b, a, b.N)
		})
		b.Run(name+"-parallel", func(b *testing.B) {
			a := benchAllocator(b, durable)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := a.Next(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportPersists(b, a, b.N)
		})
	}
}

// latencyHistogram is log-linear: 16 buckets per power of two, so any
// percentile it reports is within about 6 % of the true value.
type latencyHistogram struct {
	counts [64 * 16]uint64
	n      uint64
	max    uint64
}

func (h *latencyHistogram) record(ns uint64) {
	h.counts[latencyBucket(ns)]++
	h.n++
	h.max = max(h.max, ns)
}

func latencyBucket(ns uint64) int {
	if ns < 32 {
		return int(ns)
	}
	e := bits.Len64(ns) - 5 // ns>>e is in [16, 32)
	return (e+1)*16 + int(ns>>e) - 16
}

// bucketLow is the smallest value that lands in bucket i.
func bucketLow(i int) uint64 {
	if i < 32 {
		return uint64(i)
	}
	e := i/16 - 1
	return uint64(i%16+16) << e
}

// quantile returns the lower edge of the bucket holding quantile q.
func (h *latencyHistogram) quantile(q float64) uint64 {
	want := uint64(q * float64(h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > want {
			return bucketLow(i)
		}
	}
	return h.max
}

// BenchmarkNextLatency times every call (so ns/op includes two clock
// reads) and reports the latency distribution of Next itself, plus
// persists and stalls per million grants. With the file, p99.99 and max
// show whether any grant ever waited for msync.
func BenchmarkNextLatency(b *testing.B) {
	for _, durable := range []bool{false, true} {
		name := map[bool]string{false: "volatile", true: "durable"}[durable]
		b.Run(name, func(b *testing.B) {
			a := benchAllocator(b, durable)
			h := new(latencyHistogram)
			clock := new(latencyHistogram) // the cost of the clock reads alone
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if _, err := a.Next(); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				t2 := time.Now()
				h.record(uint64(t1.Sub(t0)))
				clock.record(uint64(t2.Sub(t1)))
			}
			b.ReportMetric(float64(h.quantile(0.50)), "p50-ns")
			b.ReportMetric(float64(h.quantile(0.99)), "p99-ns")
			b.ReportMetric(float64(h.quantile(0.9999)), "p99.99-ns")
			b.ReportMetric(float64(h.max), "max-ns")
			b.ReportMetric(float64(clock.quantile(0.99)), "clock-p99-ns")
			reportPersists(b, a, b.N)
		})
	}
}

func BenchmarkToken(b *testing.B) {
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, TokenLen)
		b.ReportAllocs()
		var i uint64
		for b.Loop() {
			i++
			buf = Token{Fence: i, Salt: ^i}.Append(buf[:0])
		}
	})
	b.Run("parse", func(b *testing.B) {
		tok := []byte("183c787522ab00000123456789abcdef")
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := ParseToken(tok); !ok {
				b.Fatal("rejected")
			}
		}
	})
}
