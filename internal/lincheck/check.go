package lincheck

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// heapSampleEvery is how often Check samples the heap: porcupine's
// search grows the heap by gigabytes a minute when it blows up, so 10 ms
// misses little of a peak and costs nothing beside the search.
const heapSampleEvery = 10 * time.Millisecond

// Report is what Check found.
type Report struct {
	Result porcupine.CheckResult
	Took   time.Duration
	Within time.Duration // the time the check was given
	// Partitions: how many; Largest: the operations of the largest;
	// MostUnknown: the most operations of unknown outcome (Return Never)
	// in one.
	Partitions, Largest, MostUnknown int
	// StartHeap and PeakHeap are the heap's bytes in objects when the
	// check began (the history and all) and the most sampled while it ran.
	StartHeap, PeakHeap uint64
	// Failed is the partition found Illegal, or one the check had not
	// finished when its time ran out (Result Unknown); Info is Failed's
	// linearization info, for porcupine.Visualize, when Illegal.
	Failed []porcupine.Operation
	Info   porcupine.LinearizationInfo
}

// Check checks ops against m one partition (m.Partition's) at a time,
// GOMAXPROCS at once: the memory of a check is then that of the few
// largest partitions, not of all, and the partition that fails or runs out
// of time is known. The whole check gets within; running out of it gives
// Result Unknown.
func Check(m porcupine.Model, ops []porcupine.Operation, within time.Duration) Report {
	r := Report{Within: within}
	var parts [][]porcupine.Operation
	if m.Partition != nil {
		parts = m.Partition(ops)
	} else if len(ops) > 0 {
		parts = [][]porcupine.Operation{ops}
	}
	r.Partitions = len(parts)
	for _, p := range parts {
		unknown := 0
		for _, op := range p {
			if op.Return == Never {
				unknown++
			}
		}
		r.Largest, r.MostUnknown = max(r.Largest, len(p)), max(r.MostUnknown, unknown)
	}
	// Each partition is a history of one object: porcupine checks it
	// whole.
	single := m
	single.Partition, single.PartitionEvent = nil, nil

	r.StartHeap = heapBytes()
	peak := make(chan uint64)
	stopSampling := make(chan struct{})
	go func() {
		top := r.StartHeap
		tick := time.NewTicker(heapSampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				top = max(top, heapBytes())
			case <-stopSampling:
				peak <- max(top, heapBytes())
				return
			}
		}
	}()

	start := time.Now()
	deadline := start.Add(within)
	var mu struct {
		sync.Mutex
		next   int // the next partition to check
		result porcupine.CheckResult
		failed int // the partition that set result, or -1
	}
	mu.result, mu.failed = porcupine.Ok, -1
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(parts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := mu.next
				mu.next++
				done := i >= len(parts) || mu.result == porcupine.Illegal || mu.result == porcupine.Unknown
				mu.Unlock()
				if done {
					return
				}
				res := porcupine.Unknown
				if left := time.Until(deadline); left > 0 {
					res = porcupine.CheckOperationsTimeout(single, parts[i], left)
				}
				if res == porcupine.Ok {
					continue
				}
				mu.Lock()
				// Illegal wins over Unknown: it is a verdict.
				if mu.failed < 0 || (res == porcupine.Illegal && mu.result != porcupine.Illegal) {
					mu.result, mu.failed = res, i
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.Result = mu.result
	if mu.failed >= 0 {
		r.Failed = parts[mu.failed]
	}
	r.Took = time.Since(start)
	if r.Result == porcupine.Illegal {
		// Again, for the partial linearizations to show: this partition
		// is known to fail, and the search stops where it does.
		_, r.Info = porcupine.CheckOperationsVerbose(single, r.Failed, max(within, time.Minute))
	}
	close(stopSampling)
	r.PeakHeap = <-peak
	return r
}

// heapBytes is the heap's bytes in objects, live or not yet swept.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// String is the verdict and what it took, for a test's log: "Ok (checked
// in 50ms, 12 partitions, largest 4000 ops, at most 6 of unknown outcome
// in one, peak heap 210 MiB from 180 MiB)".
func (r Report) String() string {
	s := fmt.Sprintf("%v (checked in %v, %d partitions, largest %d ops, at most %d of unknown outcome in one, peak heap %d MiB from %d MiB)",
		r.Result, r.Took.Round(time.Millisecond), r.Partitions, r.Largest, r.MostUnknown, r.PeakHeap>>20, r.StartHeap>>20)
	if r.Result == porcupine.Unknown && len(r.Failed) > 0 {
		s += fmt.Sprintf("; the check ran out of its %v in a partition of %d ops", r.Within, len(r.Failed))
	}
	return s
}
