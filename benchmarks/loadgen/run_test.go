package loadgen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// windows are the measured windows given, in turn, to a run that must show
// some traffic. How much a window of a given length holds depends on how
// the machine schedules the test, which no assertion may depend on: a
// window that held too little (a loaded machine stalled through it) is not
// judged but retried, longer. The last is longer than any stall; falling
// short of it means the client or the fake is stuck.
var windows = []time.Duration{150 * time.Millisecond, 600 * time.Millisecond, 2400 * time.Millisecond, 9600 * time.Millisecond}

// growing calls attempt with each of windows in turn until it reports that
// its window held enough (attempt fails the test itself on anything wrong).
func growing(t *testing.T, attempt func(window time.Duration) (enough bool, what string)) {
	t.Helper()
	var what string
	for _, w := range windows {
		var enough bool
		if enough, what = attempt(w); enough {
			return
		}
	}
	t.Fatalf("not even a window of %v held enough: %s", windows[len(windows)-1], what)
}

// runFake runs cfg against a fresh fake from newFake for each window (so
// that what a test then checks of the fake is of one run) until enough
// holds of the fake and the result, and returns those.
func runFake(t *testing.T, newFake func() *fakeServer, cfg Config, enough func(*fakeServer, *Result) bool) (*fakeServer, *Result) {
	t.Helper()
	var f *fakeServer
	var res *Result
	growing(t, func(window time.Duration) (bool, string) {
		if f != nil {
			f.close()
		}
		f = newFake()
		cfg.Addr, cfg.Duration = f.addr(), window
		res = mustRun(t, cfg)
		return enough(f, res), fmt.Sprintf("%+v", res)
	})
	return f, res
}

// fakeWith returns what starts a fake configured by configure.
func fakeWith(t *testing.T, configure func(*fakeServer)) func() *fakeServer {
	return func() *fakeServer { return startFake(t, configure) }
}

// somePairs is the least a run must show: complete cycles in its window.
func somePairs(_ *fakeServer, res *Result) bool { return res.Requests > 0 && res.Pairs > 0 }

func mustRun(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

const (
	// failWindow is the window of a run that must fail: far longer than
	// failDeadline, so that such a run ends in time only if its error
	// ended it, whatever the machine's speed.
	failWindow = 10 * time.Minute
	// failDeadline bounds the wait for that error. It is generous: it runs
	// out only when an error does not stop the run.
	failDeadline = 30 * time.Second
)

// mustFail runs cfg with a window of failWindow and expects it to end
// with a *RunError mentioning want (and the target) long before that.
func mustFail(t *testing.T, cfg Config, want ...string) *RunError {
	t.Helper()
	cfg.Duration = failWindow
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, cfg)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(failDeadline):
		cancel()
		<-done
		t.Fatalf("the run still went on %v into its %v window: an error mentioning %q must end it", failDeadline, failWindow, want)
	}
	if o.err == nil {
		t.Fatalf("run succeeded (%v), want an error mentioning %q", o.res, want)
	}
	var re *RunError
	if !errors.As(o.err, &re) {
		t.Fatalf("error %T %v is not a *RunError", o.err, o.err)
	}
	msg := o.err.Error()
	for _, w := range append(want, "target fake") {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not mention %q", msg, w)
		}
	}
	return re
}

func TestLockWorkloadAcceptsCorrectReplies(t *testing.T) {
	for _, depth := range []int{1, 8} {
		f, res := runFake(t, fakeWith(t, nil), quick("", ProtoLine, Lock, 3, depth), somePairs)
		if res.Misses != 0 {
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
	f, res := runFake(t, fakeWith(t, func(f *fakeServer) { f.batch = depth }), quick("", ProtoLine, Lock, 2, depth), somePairs)
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
			mustFail(t, quick(f.addr(), ProtoLine, Lock, 1, 1), tc.want) // ends at the error, not with the window
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
	mustFail(t, quick(f.addr(), ProtoLine, Lock, 1, 4), "connection closed by the target", "in flight")
}

func TestDialFailureNamesTarget(t *testing.T) {
	f := startFake(t, nil)
	addr := f.addr()
	f.close()
	cfg := quick(addr, ProtoLine, Lock, 1, 1)
	mustFail(t, cfg, "dial "+addr)
}

func TestTryWorkloadCountsMisses(t *testing.T) {
	cfg := quick("", ProtoLine, Try, 4, 4)
	cfg.TryKeys = 2 // 16 slots on 2 keys: most tries must miss
	// A window that saw no miss is retried, longer: runFake fails the
	// test if none does.
	f, _ := runFake(t, fakeWith(t, nil), cfg, func(f *fakeServer, res *Result) bool {
		return somePairs(f, res) && res.Misses > 0
	})
	if f.rejected.Load() != 0 {
		t.Errorf("fake rejected %d requests", f.rejected.Load())
	}
}

func TestMixedWorkloadPipelined(t *testing.T) {
	f, _ := runFake(t, fakeWith(t, nil), quick("", ProtoLine, Mixed, 2, 8), somePairs)
	if f.rejected.Load() != 0 {
		t.Errorf("rejected=%d", f.rejected.Load())
	}
}

func TestRedisWorkloads(t *testing.T) {
	for _, rel := range []RedisRelease{ReleaseCAS, ReleaseDel} {
		for _, w := range []Workload{Lock, Try, Mixed} {
			cfg := quick("", ProtoRedis, w, 2, 4)
			cfg.RedisRelease = rel
			cfg.TryKeys = 2
			// Try: a window with no miss on 2 keys shared by 8 slots is
			// retried, longer, and fails the test only if none has one.
			f, _ := runFake(t, fakeWith(t, func(f *fakeServer) { f.redis = true }), cfg, func(f *fakeServer, res *Result) bool {
				return somePairs(f, res) && (w != Try || res.Misses > 0)
			})
			if f.rejected.Load() != 0 {
				t.Errorf("%s/%s: rejected=%d", rel, w, f.rejected.Load())
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
	growing(t, func(window time.Duration) (bool, string) {
		f := startFake(t, func(f *fakeServer) { f.redis = true })
		defer f.close()
		cfg := quick(f.addr(), ProtoRedis, Lock, 2, 4)
		cfg.Duration = window
		first := mustRun(t, cfg)
		second := mustRun(t, cfg) // would get nil to SET NX on a leftover key
		// Only a first run that held locks when it stopped leaves keys.
		return first.Pairs > 0 && second.Requests > 0, fmt.Sprintf("%d pairs, then %d requests", first.Pairs, second.Requests)
	})
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
	cfg.Duration = 10 * time.Minute // ends only by the cancel
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, cfg); done <- err }()
	// Wait until the load is flowing (a generous deadline: only a stuck
	// run misses it).
	for deadline := time.Now().Add(30 * time.Second); f.requests.Load() < 100; time.Sleep(time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("the run ended before the cancel: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("%d requests after 30 s", f.requests.Load())
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(failDeadline):
		t.Fatalf("Run did not return %v after cancel (its window lasts %v)", failDeadline, cfg.Duration)
	}
}

// The window hooks run once each, start before end, never before the
// edges of the window they mark, and before Run returns. How late a timer
// fires depends on the machine's load, so nothing bounds that.
func TestWindowHooks(t *testing.T) {
	f := startFake(t, nil)
	cfg := quick(f.addr(), ProtoLine, Lock, 1, 1)
	var mu sync.Mutex
	var calls []string
	var startAt, endAt time.Time
	hook := func(name string, at *time.Time) func() {
		return func() {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, name)
			*at = now
		}
	}
	cfg.OnWindowStart = hook("start", &startAt)
	cfg.OnWindowEnd = hook("end", &endAt)
	began := time.Now()
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	returned := time.Now()
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(calls, []string{"start", "end"}) {
		t.Fatalf("hooks called %q, want start then end, once each", calls)
	}
	// The run clock starts after began (dialing comes first), and both
	// the hook timers and the connections' deadline at the window's end
	// fire late, never early: these bounds hold however loaded the machine.
	if d := startAt.Sub(began); d < cfg.Warmup {
		t.Errorf("window opened %v after the start, before the %v warm-up ended", d, cfg.Warmup)
	}
	if d := endAt.Sub(began); d < cfg.Warmup+cfg.Duration {
		t.Errorf("window closed %v after the start, before its end at %v", d, cfg.Warmup+cfg.Duration)
	}
	if endAt.After(returned) {
		t.Errorf("OnWindowEnd ran %v after Run returned", endAt.Sub(returned))
	}
}

// A run that fails never closes its window: OnWindowEnd is not called
// (OnWindowStart may be, if the failure comes after the warm-up).
func TestWindowEndHookSkippedOnFailure(t *testing.T) {
	f := startFake(t, func(f *fakeServer) {
		f.reply = func(n int64, cmd, key, arg string) (string, bool) { return "error", false }
	})
	cfg := quick(f.addr(), ProtoLine, Lock, 1, 1)
	var ended atomic.Bool
	cfg.OnWindowEnd = func() { ended.Store(true) }
	mustFail(t, cfg, `"error\n"`)
	if ended.Load() {
		t.Error("OnWindowEnd called for a failed run")
	}
}

// With Tokens, every connection authenticates first, with its own token
// (connection i: Tokens[i % len]), and the run goes on as without.
func TestTokensAuthenticateEveryConnection(t *testing.T) {
	tokens := []string{"tok-a", "tok-b", "tok-c"}
	newFake := fakeWith(t, func(f *fakeServer) {
		f.auth = func(tok string) string {
			if slices.Contains(tokens, tok) {
				return "ok"
			}
			return "error_auth"
		}
	})
	cfg := quick("", ProtoLine, Lock, 5, 4)
	cfg.Tokens = tokens
	f, _ := runFake(t, newFake, cfg, somePairs)
	f.mu.Lock()
	got := slices.Clone(f.authTokens)
	f.mu.Unlock()
	slices.Sort(got)
	if want := []string{"tok-a", "tok-a", "tok-b", "tok-b", "tok-c"}; !slices.Equal(got, want) {
		t.Errorf("auth tokens %v, want %v", got, want)
	}
	// Without tokens the same fake closes every connection: the run fails.
	cfg.Tokens = nil
	cfg.Addr = newFake().addr()
	mustFail(t, cfg, "conn ")
}

// A refused auth fails the run before its window, naming the auth.
func TestRefusedAuthFailsTheRun(t *testing.T) {
	f := startFake(t, func(f *fakeServer) { f.auth = func(string) string { return "error_auth" } })
	cfg := quick(f.addr(), ProtoLine, Lock, 2, 1)
	cfg.Tokens = []string{"wrong"}
	mustFail(t, cfg, "auth", "error_auth")
}

func TestTokensValidation(t *testing.T) {
	for _, c := range []struct {
		proto  Protocol
		tokens []string
	}{
		{ProtoLine, []string{""}},
		{ProtoLine, []string{"a\nb"}},
		{ProtoLine, []string{strings.Repeat("x", maxTokenLen+1)}},
		{ProtoRedis, []string{"tok"}},
	} {
		cfg := quick("127.0.0.1:1", c.proto, Lock, 1, 1)
		cfg.Tokens = c.tokens
		if _, err := Run(context.Background(), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%v %q: %v, want ErrConfig", c.proto, c.tokens, err)
		}
	}
}
