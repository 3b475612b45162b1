package loadgen

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// quick returns a short run against addr; tests override what they need.
func quick(addr string, proto Protocol, w Workload, conns, depth int) Config {
	return Config{
		Name: "fake", Addr: addr, Proto: proto, Workload: w,
		Conns: conns, Depth: depth,
		Warmup: 20 * time.Millisecond, Duration: 150 * time.Millisecond,
	}
}

func mustRun(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Requests == 0 {
		t.Fatalf("no request completed in the window: %+v", res)
	}
	return res
}

func mustFail(t *testing.T, cfg Config, want ...string) *RunError {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err == nil {
		t.Fatalf("run succeeded (%v), want an error mentioning %q", res, want)
	}
	var re *RunError
	if !errors.As(err, &re) {
		t.Fatalf("error %T %v is not a *RunError", err, err)
	}
	msg := err.Error()
	for _, w := range append(want, "target fake") {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
	return re
}

func TestLockWorkloadAcceptsCorrectReplies(t *testing.T) {
	for _, depth := range []int{1, 8} {
		f := startFake(t, nil)
		res := mustRun(t, quick(f.addr(), ProtoLine, Lock, 3, depth))
		if res.Pairs == 0 || res.Misses != 0 {
			t.Errorf("depth %d: pairs=%d misses=%d", depth, res.Pairs, res.Misses)
		}
		// Every pair is two requests; the window cuts at most one cycle per slot.
		if d := int64(res.Requests) - 2*int64(res.Pairs); d < -3*int64(depth) || d > 3*int64(depth) {
			t.Errorf("depth %d: %d requests for %d pairs", depth, res.Requests, res.Pairs)
		}
		if got := f.rejected.Load(); got != 0 {
			t.Errorf("depth %d: fake rejected %d requests", depth, got)
		}
		if res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
			t.Errorf("depth %d: implausible latency %+v", depth, res.Latency)
		}
	}
}

// The fake answers only once `depth` requests of a connection are
// unanswered, and rejects a release whose token is not the one granted for
// its key: the run progresses only if the client keeps depth requests in
// flight and matches replies to requests in order.
func TestPipelineKeepsDepthInFlightInOrder(t *testing.T) {
	const depth = 16
	f := startFake(t, func(f *fakeServer) { f.batch = depth })
	res := mustRun(t, quick(f.addr(), ProtoLine, Lock, 2, depth))
	if got := f.maxInFlight.Load(); got != depth {
		t.Errorf("max requests in flight = %d, want %d", got, depth)
	}
	if f.rejected.Load() != 0 || res.Pairs == 0 {
		t.Errorf("rejected=%d pairs=%d", f.rejected.Load(), res.Pairs)
	}
}

func TestWrongRepliesFailTheRun(t *testing.T) {
	grant := func(n int64, cmd, key, arg string) string {
		if cmd == "l" {
			return "ok 0123456789abcdef0123456789abcdef 30"
		}
		return "ok"
	}
	cases := []struct {
		name  string
		reply func(n int64, cmd, key, arg string) string
		want  string
	}{
		{"bare ok to acquire", func(n int64, cmd, key, arg string) string { return "ok" }, `unexpected reply "ok\n" to "l bench.c0.s0 10 30"`},
		{"short token", func(n int64, cmd, key, arg string) string { return "ok 0123 30" }, "32 lowercase hex"},
		{"upper-case token", func(n int64, cmd, key, arg string) string { return "ok 0123456789ABCDEF0123456789abcdef 30" }, "32 lowercase hex"},
		{"wrong lease", func(n int64, cmd, key, arg string) string { return "ok 0123456789abcdef0123456789abcdef 33" }, "lease"},
		{"timeout to an uncontended lock", func(n int64, cmd, key, arg string) string { return "timeout" }, `"timeout\n"`},
		{"error to release", func(n int64, cmd, key, arg string) string {
			if cmd == "r" {
				return "error"
			}
			return grant(n, cmd, key, arg)
		}, `"error\n" to "r bench.c0.s0 0123456789abcdef0123456789abcdef"`},
		{"late failure", func(n int64, cmd, key, arg string) string {
			if n > 500 {
				return "error_max_locks"
			}
			return grant(n, cmd, key, arg)
		}, "error_max_locks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startFake(t, func(f *fakeServer) {
				f.reply = func(n int64, cmd, key, arg string) (string, bool) { return tc.reply(n, cmd, key, arg), false }
			})
			cfg := quick(f.addr(), ProtoLine, Lock, 1, 1)
			cfg.Duration = 2 * time.Second // an error must end the run long before this
			began := time.Now()
			mustFail(t, cfg, tc.want)
			if el := time.Since(began); el > time.Second {
				t.Errorf("the run took %v to fail", el)
			}
		})
	}
}

func TestExtraReplyIsAnError(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.reply = func(n int64, cmd, key, arg string) (string, bool) {
			// One request, two replies: the second must not be taken for
			// the answer to the release appended after the first.
			return "ok 0123456789abcdef0123456789abcdef 30\nok", false
		}
	})
	mustFail(t, quick(f.addr(), ProtoLine, Lock, 1, 1), "no request in flight")
}

func TestClosedConnectionIsAnError(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.reply = func(n int64, cmd, key, arg string) (string, bool) {
			if n > 10 {
				return "", true
			}
			if cmd == "l" {
				return "ok 0123456789abcdef0123456789abcdef 30", false
			}
			return "ok", false
		}
	})
	cfg := quick(f.addr(), ProtoLine, Lock, 1, 4)
	cfg.Duration = 2 * time.Second
	mustFail(t, cfg, "connection closed by the target", "in flight")
}

func TestDialFailureNamesTarget(t *testing.T) {
	f := startFake(t, nil)
	addr := f.addr()
	f.close()
	cfg := quick(addr, ProtoLine, Lock, 1, 1)
	mustFail(t, cfg, "dial "+addr)
}

func TestTryWorkloadCountsMisses(t *testing.T) {
	f := startFake(t, nil)
	cfg := quick(f.addr(), ProtoLine, Try, 4, 4)
	cfg.TryKeys = 2 // 16 slots on 2 keys: most tries must miss
	res := mustRun(t, cfg)
	if res.Misses == 0 || res.Pairs == 0 {
		t.Errorf("pairs=%d misses=%d, want both > 0", res.Pairs, res.Misses)
	}
	if f.rejected.Load() != 0 {
		t.Errorf("fake rejected %d requests", f.rejected.Load())
	}
}

func TestMixedWorkloadPipelined(t *testing.T) {
	f := startFake(t, nil)
	res := mustRun(t, quick(f.addr(), ProtoLine, Mixed, 2, 8))
	if res.Pairs == 0 || f.rejected.Load() != 0 {
		t.Errorf("pairs=%d rejected=%d", res.Pairs, f.rejected.Load())
	}
}

func TestRedisWorkloads(t *testing.T) {
	for _, rel := range []RedisRelease{ReleaseCAS, ReleaseDel} {
		for _, w := range []Workload{Lock, Try, Mixed} {
			f := startFake(t, func(f *fakeServer) { f.redis = true })
			cfg := quick(f.addr(), ProtoRedis, w, 2, 4)
			cfg.RedisRelease = rel
			cfg.TryKeys = 2
			res := mustRun(t, cfg)
			if res.Pairs == 0 || f.rejected.Load() != 0 {
				t.Errorf("%s/%s: pairs=%d rejected=%d", rel, w, res.Pairs, f.rejected.Load())
			}
			if w == Try && res.Misses == 0 {
				t.Errorf("%s/%s: no misses on 2 keys shared by 8 slots", rel, w)
			}
		}
	}
}

func TestRedisWrongReplyFails(t *testing.T) {
	// nil to SET NX on a key no one else uses: someone else holds it.
	f := startFake(t, func(f *fakeServer) { f.redis, f.acquireReply = true, "$-1\r\n" })
	mustFail(t, quick(f.addr(), ProtoRedis, Lock, 1, 1), `unexpected reply "$-1\r\n" to "SET bench.`, "NX PX 30000")
}

// Redis keeps a stopped run's last locks until they expire, so two runs in
// a row must not share keys.
func TestRedisRunsUseFreshKeys(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.redis = true })
	cfg := quick(f.addr(), ProtoRedis, Lock, 2, 4)
	mustRun(t, cfg)
	mustRun(t, cfg) // would get nil to SET NX on a leftover key
}

// A release that deleted the wrong number of keys means the lock was not
// (only) ours: an error, whichever release variant is used.
func TestRedisWrongDeleteCountFails(t *testing.T) {
	for _, tc := range []struct {
		rel   RedisRelease
		reply string
	}{{ReleaseCAS, ":0\r\n"}, {ReleaseDel, ":2\r\n"}, {ReleaseDel, "+OK\r\n"}} {
		f := startFake(t, func(f *fakeServer) { f.redis, f.releaseReply = true, tc.reply })
		cfg := quick(f.addr(), ProtoRedis, Lock, 1, 1)
		cfg.RedisRelease = tc.rel
		mustFail(t, cfg, "want :1", strconv.Quote(tc.reply))
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: "x:1", Workload: Hot, Depth: 2}, "needs depth 1"},
		{Config{Addr: "x:1", Workload: Sem, Depth: 4}, "needs depth 1"},
		{Config{Addr: "x:1", Workload: Hot, Proto: ProtoRedis}, "no Redis equivalent"},
		{Config{Addr: "x:1", Workload: "nope"}, "unknown workload"},
		{Config{Addr: "x:1", KeyPrefix: "a b"}, "key prefix"},
		{Config{}, "no address"},
	}
	for _, tc := range cases {
		_, err := Run(context.Background(), tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want ErrConfig mentioning %q", tc.cfg, err, tc.want)
		}
	}
}

func TestCancelStopsTheRun(t *testing.T) {
	f := startFake(t, nil)
	cfg := quick(f.addr(), ProtoLine, Lock, 2, 2)
	cfg.Duration = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, cfg); done <- err }()
	for f.requests.Load() < 100 { // wait until the load is flowing
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestWindowHooks(t *testing.T) {
	f := startFake(t, nil)
	cfg := quick(f.addr(), ProtoLine, Lock, 1, 1)
	var startAt, endAt time.Time
	cfg.OnWindowStart = func() { startAt = time.Now() }
	cfg.OnWindowEnd = func() { endAt = time.Now() }
	began := time.Now()
	mustRun(t, cfg)
	if startAt.IsZero() || endAt.IsZero() {
		t.Fatalf("hooks not called: start %v end %v", startAt, endAt)
	}
	// Timers fire late on a loaded machine (the race detector, two cores),
	// never early; allow generous lateness.
	const late = 100 * time.Millisecond
	if d := startAt.Sub(began); d < cfg.Warmup || d > cfg.Warmup+late {
		t.Errorf("window opened %v after the start, want %v", d, cfg.Warmup)
	}
	if d := endAt.Sub(began); d < cfg.Warmup+cfg.Duration-5*time.Millisecond || d > cfg.Warmup+cfg.Duration+late {
		t.Errorf("window closed %v after the start, want %v", d, cfg.Warmup+cfg.Duration)
	}
}
