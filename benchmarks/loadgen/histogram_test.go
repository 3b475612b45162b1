package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsTileTheRange(t *testing.T) {
	next := uint64(0)
	for i := 0; i < numBuckets; i++ {
		low, width := bucketRange(i)
		if low != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, low, next)
		}
		if bucketOf(low) != i || bucketOf(low+width-1) != i {
			t.Fatalf("bucket %d [%d, %d) maps to %d..%d", i, low, low+width, bucketOf(low), bucketOf(low+width-1))
		}
		if low >= subCount && float64(width)/float64(low) > 1.0/halfCount+1e-12 {
			t.Fatalf("bucket %d too wide: %d at %d", i, width, low)
		}
		next = low + width
	}
	if next-1 != maxValue {
		t.Fatalf("last bucket ends at %d, want %d", next-1, maxValue)
	}
	if bucketOf(math.MaxUint64) != numBuckets-1 {
		t.Fatal("values above maxValue must land in the last bucket")
	}
}

func TestQuantilesMatchExactWithinResolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	vals := make([]int64, 200_000)
	for i := range vals {
		// Log-normal-ish around 50 µs with a long tail, like loopback RTTs.
		vals[i] = int64(50_000 * math.Exp(rng.NormFloat64()))
		h.Record(vals[i])
	}
	slices.Sort(vals)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := float64(vals[int(math.Ceil(q*float64(len(vals))))-1])
		got := float64(h.Quantile(q))
		if math.Abs(got-exact)/exact > 1.0/subCount+1e-9 {
			t.Errorf("q%.3f = %v, exact %v", q, time.Duration(got), time.Duration(exact))
		}
	}
	if h.Max() != time.Duration(vals[len(vals)-1]) {
		t.Errorf("max = %v, want %v", h.Max(), time.Duration(vals[len(vals)-1]))
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	var a, b, both Histogram
	for i := int64(0); i < 10_000; i++ {
		v := i * i
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
		both.Record(v)
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(new(Histogram)) // an empty one changes nothing
	if m != both {
		t.Fatalf("merged summary %+v, want %+v", m.Summarize(), both.Summarize())
	}
}

func TestEmptyAndTinyHistograms(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram must report zeros")
	}
	h.Record(-5) // clock oddities count as 0
	h.Record(7)
	if h.Quantile(0.5) != 0 || h.Quantile(1) != 7 || h.Count() != 2 {
		t.Fatalf("got %+v", h.Summarize())
	}
}
