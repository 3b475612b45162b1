//go:build !race

package loadgen

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestRequestPathDoesNotAllocate feeds canned replies through a worker's
// reply handling (parse, validate, histogram, next request) and checks it
// allocates nothing: the load generator must not add GC work to the machine
// it measures.
func TestRequestPathDoesNotAllocate(t *testing.T) {
	const depth = 4
	fixed := func(acquire, release string) func(s *slot, dst []byte) []byte {
		return func(s *slot, dst []byte) []byte {
			if s.stage == stageAcquire {
				return append(dst, acquire...)
			}
			return append(dst, release...)
		}
	}
	// counter answers what the slot's pending incr must get.
	counter := func(prefix, suffix string) func(s *slot, dst []byte) []byte {
		return func(s *slot, dst []byte) []byte {
			dst = append(dst, prefix...)
			dst = strconv.AppendInt(dst, s.counts[s.kidx]+1, 10)
			return append(dst, suffix...)
		}
	}
	// readBack answers the write with ack and the read with the value.
	readBack := func(ack, prefix, suffix string) func(s *slot, dst []byte) []byte {
		return func(s *slot, dst []byte) []byte {
			if s.stage == stageWrite {
				return append(dst, ack...)
			}
			dst = append(dst, prefix...)
			dst = append(dst, s.token[:]...)
			return append(dst, suffix...)
		}
	}
	line := func(w Workload) Config { return Config{Addr: "x:1", Workload: w, Depth: depth} }
	resp := func(w Workload) Config { return Config{Addr: "x:1", Proto: ProtoRedis, Workload: w, Depth: depth} }
	cases := []struct {
		name  string
		cfg   Config
		reply func(s *slot, dst []byte) []byte
	}{
		{"dflockd lock", line(Lock), fixed("ok 0123456789abcdef0123456789abcdef 30\n", "ok\n")},
		{"dflockd try", line(Try), fixed("timeout\n", "ok\n")},
		{"redis cas", resp(Mixed), fixed("+OK\r\n", ":1\r\n")},
		{"dflockd incr", line(Incr), counter("ok ", "\n")},
		{"dflockd kv", line(KV), readBack("ok\n", "ok ", "\n")},
		{"dflockd list", line(List), readBack("ok 1\n", "ok ", "\n")},
		{"redis incr", resp(Incr), counter(":", "\r\n")},
		{"redis kv", resp(KV), readBack("+OK\r\n", "$32\r\n", "\r\n")},
		{"redis list", resp(List), readBack(":1\r\n", "$32\r\n", "\r\n")},
	}
	for _, tc := range cases {
		cfg := tc.cfg.withDefaults()
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		var abort atomic.Bool
		w := newWorker(cfg, 0, nil, newScript(cfg), 42, &abort)
		w.base, w.start, w.end = time.Now(), 0, int64(time.Hour)
		for i := range w.slots {
			w.wbuf = w.sc.begin(&w.slots[i], w.wbuf)
			w.queue(i)
		}
		scratch := make([]byte, 0, 128)
		step := func() {
			// Stand in for flush: the requests count as written.
			for _, i := range w.pending {
				w.fifo.push(i)
			}
			w.pending, w.wbuf = w.pending[:0], w.wbuf[:0]
			// One read's worth of replies, one per slot in FIFO order.
			for k := 0; k < w.fifo.len(); k++ {
				i := w.fifo.buf[(w.fifo.head+k)%len(w.fifo.buf)]
				scratch = tc.reply(&w.slots[i], scratch[:0])
				w.rend += copy(w.rbuf[w.rend:], scratch)
			}
			if err := w.process(w.now()); err != nil {
				t.Fatal(err)
			}
		}
		if a := testing.AllocsPerRun(1000, step); a != 0 {
			t.Errorf("%s: %v allocations per batch of %d replies", tc.name, a, depth)
		}
		if w.reqs == 0 {
			t.Errorf("%s: no reply was counted", tc.name)
		}
	}
}
