package engine

import (
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// BenchmarkObservatory compares the uncontended acquire/release with the
// observatory's recording off and on (Config.Events): the cost a server
// pays for its event ring and claim times when nobody looks.
func BenchmarkObservatory(b *testing.B) {
	for _, c := range []struct {
		name   string
		events int
	}{{"off", 0}, {"on", 16384}} {
		b.Run(c.name, func(b *testing.B) {
			l := newBenchLocker(New(Config{TokenKey: testKey, FenceFloor: 1 << 60, Events: c.events}), vocab.OpLock, "bench-key", 0)
			l.cycle(b) // create the key
			b.ReportAllocs()
			for b.Loop() {
				l.cycle(b)
			}
			l.mustNotTimeOut(b)
		})
	}
}
