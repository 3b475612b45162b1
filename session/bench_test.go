package session

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
)

// BenchmarkInput measures the request path on the fake transport:
// framing, parsing, engine, reply encoding and the write, without sockets.
// Tokens are known before the l frames run (Engine.Token of the next
// fences); rewriting them each op costs ~1 % of an op.
func BenchmarkInput(b *testing.B) {
	// 32 l/r pairs over 4 existing keys, one read: one op is 64 frames.
	b.Run("pipelined-64", func(b *testing.B) {
		const pairs = 32
		fs := newFakeServer(b, Config{}, engine.Config{})
		c := fs.open()
		c.poison = false
		var buf []byte
		var tokOff []int
		for i := range pairs {
			key := fmt.Sprintf("bench-%d", i%4)
			buf = append(buf, request("l", key, "0 10")...)
			buf = append(buf, "r\n"+key+"\n"...)
			tokOff = append(tokOff, len(buf))
			buf = append(buf, make([]byte, fence.TokenLen)...)
			buf = append(buf, '\n')
		}
		wantLen := 0
		op := func() {
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
		wantLen = pairs * len("ok "+tokenFor(1)+" 10\nok\n")
		op() // create the keys
		if n := bytes.Count(c.out, []byte("ok\n")); n != pairs {
			b.Fatalf("%d releases succeeded, want %d: %q", n, pairs, c.out)
		}
		b.SetBytes(int64(len(buf)))
		b.ReportAllocs()
		for b.Loop() {
			op()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*pairs), "ns/frame")
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
