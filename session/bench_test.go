package session

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/vocab"
)

const pipelinedPairs = 32

// pipelined returns one read of pipelinedPairs l/r pairs over 4 existing
// keys on a fresh fake server, as an op to repeat, and the read's size;
// counted turns on the transport's request counters (/metrics).
func pipelined(b *testing.B, counted bool) (op func(), size int) {
	fs := newFakeServer(b, Config{}, engine.Config{})
	if counted {
		fs.scratch.Counters = new(Counters)
		fs.hub.RegisterCounters(fs.scratch.Counters)
	}
	c := fs.open()
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

// BenchmarkCountersCost is what /metrics' request counters cost the
// request path: the pipelined lock/release read with counters on and
// off, interleaved op by op in one run so that the machine's noise
// falls on both alike. It reports both in ns/frame and their ratio.
func BenchmarkCountersCost(b *testing.B) {
	on, _ := pipelined(b, true)
	off, _ := pipelined(b, false)
	var tOn, tOff time.Duration
	for b.Loop() {
		t0 := time.Now()
		on()
		t1 := time.Now()
		off()
		tOn += t1.Sub(t0)
		tOff += time.Since(t1)
	}
	frames := float64(b.N * 2 * pipelinedPairs)
	b.ReportMetric(float64(tOn.Nanoseconds())/frames, "ns/frame-counted")
	b.ReportMetric(float64(tOff.Nanoseconds())/frames, "ns/frame-uncounted")
	b.ReportMetric(float64(tOn)/float64(tOff), "counted/uncounted")
}

// BenchmarkInput measures the request path on the fake transport:
// framing, parsing, engine, reply encoding and the write, without sockets.
// Tokens are known before the l frames run (Engine.Token of the next
// fences); rewriting them each op costs ~1 % of an op.
func BenchmarkInput(b *testing.B) {
	// 32 l/r pairs over 4 existing keys, one read: one op is 64 frames.
	b.Run("pipelined-64", func(b *testing.B) {
		op, size := pipelined(b, false)
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
		fs := newFakeServer(b, Config{}, engine.Config{})
		c := fs.open()
		c.poison = false
		lock := []byte(request("l", "bench-key", "0 10"))
		rel := []byte("r\nbench-key\n" + tokenFor(1) + "\n")
		tokAt := len("r\nbench-key\n")
		lockNext := true
		op := func() {
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
		b.SetBytes(int64(len(lock)+len(rel)) / 2)
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
