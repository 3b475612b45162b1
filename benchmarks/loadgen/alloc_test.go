//go:build !race

package loadgen

import (
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
	cases := []struct {
		name  string
		cfg   Config
		reply func(s *slot) string
	}{
		{"dflockd lock", Config{Addr: "x:1", Workload: Lock, Depth: depth}, func(s *slot) string {
			if s.stage == stageAcquire {
				return "ok 0123456789abcdef0123456789abcdef 30\n"
			}
			return "ok\n"
		}},
		{"dflockd try", Config{Addr: "x:1", Workload: Try, Depth: depth}, func(s *slot) string {
			if s.stage == stageAcquire {
				return "timeout\n"
			}
			return "ok\n"
		}},
		{"redis cas", Config{Addr: "x:1", Proto: ProtoRedis, Workload: Mixed, Depth: depth}, func(s *slot) string {
			if s.stage == stageAcquire {
				return "+OK\r\n"
			}
			return ":1\r\n"
		}},
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
		step := func() {
			// Stand in for flush: the requests count as written.
			for _, i := range w.pending {
				w.fifo.push(i)
			}
			w.pending, w.wbuf = w.pending[:0], w.wbuf[:0]
			// One read's worth of replies, one per slot in FIFO order.
			for k := 0; k < w.fifo.len(); k++ {
				i := w.fifo.buf[(w.fifo.head+k)%len(w.fifo.buf)]
				w.rend += copy(w.rbuf[w.rend:], tc.reply(&w.slots[i]))
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
