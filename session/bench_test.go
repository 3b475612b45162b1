package session

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

const pipelinedPairs = 32

// pipelined returns one read of pipelinedPairs l/r pairs over 4 existing
// keys on a fresh fake server, as an op to repeat, and the read's size;
// counted turns on the transport's request counters (/metrics), mono
// puts the hub on the monotonic clock a server reads.
func pipelined(b *testing.B, counted, mono bool) (op func(), size int) {
	return pipelinedWith(b, counted, mono, nil)
}

// pipelinedWith is pipelined on a server with policy pol (nil: none),
// the connection authenticated as its identity "tok-a".
func pipelinedWith(b *testing.B, counted, mono bool, pol *policy.Policy) (op func(), size int) {
	fs := newFakeServer(b, Config{Policy: pol}, engine.Config{})
	if mono {
		fs.hub.clock = newMonoFrom(fs.clock.Now())
	}
	if counted {
		fs.scratch.Counters = new(Counters)
		fs.hub.RegisterCounters(fs.scratch.Counters)
	}
	c := fs.open()
	if pol != nil {
		if got := fs.traffic(c, request("auth", "_", "tok-a")); got != "ok\n" {
			b.Fatalf("auth: %q", got)
		}
	}
	c.poison = false
	var buf []byte
	var tokOff []int
	for i := range pipelinedPairs {
		key := fmt.Sprintf("bench-%d", i%4)
		buf = append(buf, request("l", key, "0 10")...)
		buf = append(buf, "r\n"+key+"\n"...)
		tokOff = append(tokOff, len(buf))
		buf = append(buf, make([]byte, fence.TokenLen)...)
		buf = append(buf, '\n')
	}
	wantLen := pipelinedPairs * len("ok "+tokenFor(1)+" 10\nok\n")
	op = func() {
		base := fs.eng.LastFence()
		for i, off := range tokOff {
			fs.eng.Token(base + uint64(i) + 1).Append(buf[off:off])
		}
		c.out = c.out[:0]
		c.load(buf)
		fs.input(c)
		if len(c.out) != wantLen {
			b.Fatalf("replies: %q", c.out)
		}
	}
	op() // create the keys
	if n := bytes.Count(c.out, []byte("ok\n")); n != pipelinedPairs {
		b.Fatalf("%d releases succeeded, want %d: %q", n, pipelinedPairs, c.out)
	}
	if counted {
		if n := fs.hub.Counts().Requests[vocab.OpLock]; n != pipelinedPairs {
			b.Fatalf("counted %d lock requests, want %d", n, pipelinedPairs)
		}
	}
	return op, len(buf)
}

// BenchmarkCountersCost is what /metrics' request counters and latency
// histograms cost the request path: the pipelined lock/release read
// with counters on and off, interleaved op by op in one run so that the
// machine's noise falls on both alike, on the monotonic clock a server
// reads (the histograms read it once more per read; the fake clock
// would hide that). It reports both in ns/frame and their ratio.
func BenchmarkCountersCost(b *testing.B) {
	on, _ := pipelined(b, true, true)
	off, _ := pipelined(b, false, true)
	tOn, tOff := alternate(b, on, off)
	frames := float64(b.N * 2 * pipelinedPairs)
	b.ReportMetric(float64(tOn.Nanoseconds())/frames, "ns/frame-counted")
	b.ReportMetric(float64(tOff.Nanoseconds())/frames, "ns/frame-uncounted")
	b.ReportMetric(float64(tOn)/float64(tOff), "counted/uncounted")
}

// alternate runs first and then second for each of b's iterations, so
// that the machine's noise falls on both alike, and returns the time each
// took in all.
func alternate(b *testing.B, first, second func()) (tFirst, tSecond time.Duration) {
	for b.Loop() {
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		tFirst += t1.Sub(t0)
		tSecond += time.Since(t1)
	}
	return tFirst, tSecond
}

// BenchmarkCountersCostSingle is BenchmarkCountersCost for one frame
// per read, where what the counters cost each read (the latency
// histograms read the clock once at the end of a read) falls on a
// single request.
func BenchmarkCountersCostSingle(b *testing.B) {
	on, _ := single(b, true, true)
	off, _ := single(b, false, true)
	tOn, tOff := alternate(b, on, off)
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "ns/frame-counted")
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "ns/frame-uncounted")
	b.ReportMetric(float64(tOn)/float64(tOff), "counted/uncounted")
}

// single returns one read of one frame, alternating l and r on one
// existing key, as an op to repeat, and the mean frame's size; counted
// turns on the transport's counters, mono the monotonic clock.
func single(b *testing.B, counted, mono bool) (op func(), size int) {
	fs := newFakeServer(b, Config{}, engine.Config{})
	if mono {
		fs.hub.clock = newMonoFrom(fs.clock.Now())
	}
	if counted {
		fs.scratch.Counters = new(Counters)
		fs.hub.RegisterCounters(fs.scratch.Counters)
	}
	c := fs.open()
	c.poison = false
	lock := []byte(request("l", "bench-key", "0 10"))
	rel := []byte("r\nbench-key\n" + tokenFor(1) + "\n")
	tokAt := len("r\nbench-key\n")
	lockNext := true
	op = func() {
		c.out = c.out[:0]
		if lockNext {
			c.load(lock)
		} else {
			c.load(rel)
		}
		fs.input(c)
		if len(c.out) < 3 || c.out[0] != 'o' || c.out[1] != 'k' {
			b.Fatalf("reply: %q", c.out)
		}
		if lockNext {
			copy(rel[tokAt:], c.out[3:3+fence.TokenLen]) // release this grant next
		}
		lockNext = !lockNext
	}
	op()
	op()
	return op, (len(lock) + len(rel)) / 2
}

// monoFrom is the monotonic clock a server reads, starting at a fake
// server's time so that its engine's deadlines stay ahead.
type monoFrom struct {
	mono  *timerwheel.MonoClock
	start timerwheel.Instant
}

func newMonoFrom(start timerwheel.Instant) *monoFrom {
	return &monoFrom{mono: timerwheel.NewMonoClock(), start: start}
}

func (c *monoFrom) Now() timerwheel.Instant { return c.start + c.mono.Now() }

// BenchmarkInput measures the request path on the fake transport:
// framing, parsing, engine, reply encoding and the write, without sockets.
// Tokens are known before the l frames run (Engine.Token of the next
// fences); rewriting them each op costs ~1 % of an op.
func BenchmarkInput(b *testing.B) {
	// 32 l/r pairs over 4 existing keys, one read: one op is 64 frames.
	b.Run("pipelined-64", func(b *testing.B) {
		op, size := pipelined(b, false, false)
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			op()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*pipelinedPairs), "ns/frame")
	})
	// The same with a policy of 100 rules (the identity's own), checked
	// on every request: the policy's cost on the request path.
	b.Run("pipelined-64-policy", func(b *testing.B) {
		op, size := pipelinedWith(b, false, false, hundredRules(b, "bench"))
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			op()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*pipelinedPairs), "ns/frame")
	})
	// One frame per read, alternating l and r on one existing key: one
	// op is one frame.
	b.Run("single", func(b *testing.B) {
		op, size := single(b, false, false)
		b.SetBytes(int64(size))
		b.ReportAllocs()
		for b.Loop() {
			op()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/frame")
	})
	// 64 frames per read of the redis-feats primitives the suite compares
	// with Redis (PERF.md): incr, kset+kget, rpush+lpop over 64 keys.
	for _, w := range []struct {
		name string
		reqs func(key string) string
	}{
		{"incr-64", func(k string) string { return request("incr", k, "1") }},
		{"kset-kget-64", func(k string) string {
			return request("kset", k, "0123456789abcdef0123456789abcdef") + request("kget", k, "_")
		}},
		{"rpush-lpop-64", func(k string) string {
			return request("rpush", k, "0123456789abcdef0123456789abcdef") + request("lpop", k, "_")
		}},
	} {
		b.Run(w.name, func(b *testing.B) {
			fs := newFakeServer(b, Config{}, engine.Config{})
			c := fs.open()
			c.poison = false
			var buf []byte
			frames := 0
			for i := 0; frames < 64; i++ {
				r := w.reqs(fmt.Sprintf("bench-%d", i))
				buf = append(buf, r...)
				frames += bytes.Count([]byte(r), []byte("\n")) / 3
			}
			op := func() {
				c.out = c.out[:0]
				c.load(buf)
				fs.input(c)
				if n := bytes.Count(c.out, []byte("\nok")); n != frames-1 || !bytes.HasPrefix(c.out, []byte("ok")) {
					b.Fatalf("replies: %q", c.out)
				}
			}
			op()
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
		})
	}
}
