package parse

import (
	"fmt"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

const benchToken = "00000000000000010123456789abcdef"

var (
	benchLock    = []byte("l\norders/42\n10 30\n")
	benchRelease = []byte("r\norders/42\n" + benchToken + "\n")
)

func BenchmarkNext(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchLock)))
	for b.Loop() {
		if _, _, err := Next(benchLock); err != nil {
			b.Fatal(err)
		}
	}
}

func benchParse(b *testing.B, in []byte) {
	f, _, err := Next(in)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(f); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLock(b *testing.B)    { benchParse(b, benchLock) }
func BenchmarkParseRelease(b *testing.B) { benchParse(b, benchRelease) }

func BenchmarkParseLockParallel(b *testing.B) {
	f, _, _ := Next(benchLock)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := Parse(f); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkAppendGrant(b *testing.B) {
	out := make([]byte, 0, 64)
	tok := []byte(benchToken)
	b.ReportAllocs()
	for b.Loop() {
		out = AppendGrant(out[:0], vocab.StatusOK, tok, 30, 0, false)
	}
}

// BenchmarkFramePipeline64 is one read's worth of pipelined requests: 64
// frames in one buffer, split and parsed front to back.
func BenchmarkFramePipeline64(b *testing.B) {
	var buf []byte
	for i := range 64 {
		switch i % 4 {
		case 0:
			buf = fmt.Appendf(buf, "l\norders/%d\n10 30\n", i)
		case 1:
			buf = fmt.Appendf(buf, "r\norders/%d\r\n%s\r\n", i, benchToken)
		case 2:
			buf = fmt.Appendf(buf, "sl\npool/%d\n0 8 60\n", i)
		case 3:
			buf = fmt.Appendf(buf, "n\norders/%d\n%s 30\n", i, benchToken)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		rest, frames := buf, 0
		for len(rest) > 0 {
			f, n, err := Next(rest)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Parse(f); err != nil {
				b.Fatal(err)
			}
			rest = rest[n:]
			frames++
		}
		if frames != 64 {
			b.Fatalf("%d frames", frames)
		}
	}
}
