package loadgen

import (
	"math/bits"
	"time"
)

// Histogram layout, the log-linear scheme of HdrHistogram: values below
// subCount are counted exactly; above that, every power of two is split into
// halfCount equal buckets, so a bucket's width is at most 1/halfCount of its
// lower bound.
const (
	subBits   = 7            // 64 buckets per octave: reported values are within ±0.8 %
	subCount  = 1 << subBits // exact buckets for 0..127 ns
	halfCount = subCount / 2 // buckets per octave above subCount
	maxBits   = 37           // 2^37 ns ≈ 137 s: longer than any bounded run's reply wait
	maxValue  = 1<<maxBits - 1
	// numBuckets is the index of maxValue's bucket plus one.
	numBuckets = subCount + (maxBits-subBits)*halfCount
)

// Histogram counts durations in nanoseconds in log-linear buckets. Values
// above ~137 s land in the last bucket (Max stays exact). The zero value is
// ready to use; it is about 16 KiB, so keep it behind a pointer.
type Histogram struct {
	counts [numBuckets]uint64
	n      uint64
	sum    uint64
	min    uint64
	max    uint64
}

// bucketOf returns the index of the bucket that holds v.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	if v > maxValue {
		v = maxValue
	}
	shift := bits.Len64(v) - subBits // ≥ 1 because v ≥ subCount
	m := int(v >> uint(shift))       // top subBits bits: in [halfCount, subCount)
	return subCount + (shift-1)*halfCount + m - halfCount
}

// bucketRange returns the smallest value of bucket i and its width.
func bucketRange(i int) (low, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	j := i - subCount
	shift := uint(j/halfCount + 1)
	m := uint64(j%halfCount + halfCount)
	return m << shift, 1 << shift
}

// Record counts one duration of ns nanoseconds; negative values count as 0.
func (h *Histogram) Record(ns int64) {
	v := uint64(0)
	if ns > 0 {
		v = uint64(ns)
	}
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	h.sum += v
}

// Merge adds o's counts into h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest recorded value (exact).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the exact mean of the recorded values.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile returns the value at quantile q (0 < q ≤ 1): the midpoint of the
// bucket holding the ceil(q·n)-th smallest value, clamped to the exact
// minimum and maximum. An empty histogram returns 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	if rank > h.n {
		rank = h.n
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bucketRange(i)
			v := low + width/2
			if v < h.min {
				v = h.min
			}
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}

// Summary is the condensed form of a Histogram reported by Run.
type Summary struct {
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summarize condenses h.
func (h *Histogram) Summarize() Summary {
	return Summary{
		Count: h.n,
		Mean:  h.Mean(),
		P50:   h.Quantile(0.50),
		P90:   h.Quantile(0.90),
		P99:   h.Quantile(0.99),
		P999:  h.Quantile(0.999),
		Max:   h.Max(),
	}
}
