package loadgen

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPrimitiveWorkloadsAcceptCorrectReplies(t *testing.T) {
	const conns, keys = 3, 8
	for _, proto := range []Protocol{ProtoLine, ProtoRedis} {
		for _, w := range []Workload{Incr, KV, List} {
			for _, depth := range []int{1, 8} {
				name := proto.String() + "/" + string(w)
				want := conns * depth * keys
				// Every slot goes through its keys several times in a run:
				// the load is spread over conns × depth × keys keys. A
				// window too short for every slot to reach its last key
				// (a loaded machine) is retried, longer.
				f, res := runFake(t, fakeWith(t, func(f *fakeServer) { f.redis = proto == ProtoRedis }),
					quick("", proto, w, conns, depth), func(f *fakeServer, res *Result) bool {
						return somePairs(f, res) && primKeys(f, w) >= want
					})
				if f.rejected.Load() != 0 {
					t.Errorf("%s d=%d: cycles=%d rejected=%d", name, depth, res.Pairs, f.rejected.Load())
				}
				// The fake may still be answering the last requests.
				f.mu.Lock()
				p := &f.prim
				switch w {
				case Incr:
					var sum int64
					for _, v := range p.counters {
						sum += v
					}
					if sum != p.incrs {
						t.Errorf("%s d=%d: counters sum to %d after %d incrs", name, depth, sum, p.incrs)
					}
					if res.Pairs != res.Requests {
						t.Errorf("%s d=%d: %d cycles for %d requests, want one request per cycle", name, depth, res.Pairs, res.Requests)
					}
				case List:
					for k, l := range p.lists {
						if len(l) > 1 { // one item at most: a run cut between push and pop
							t.Errorf("%s d=%d: list %s holds %d items", name, depth, k, len(l))
						}
					}
				}
				f.mu.Unlock()
				if n := primKeys(f, w); n != want {
					t.Errorf("%s d=%d: %d distinct keys, want %d", name, depth, n, want)
				}
			}
		}
	}
}

// primKeys is how many keys of workload w's kind the fake holds.
func primKeys(f *fakeServer, w Workload) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch w {
	case Incr:
		return len(f.prim.counters)
	case KV:
		return len(f.prim.kv)
	case List:
		return len(f.prim.lists)
	}
	panic("primKeys: not a primitive workload: " + string(w))
}

// Counters, KV entries and lists outlive a run, and the replies are checked
// against fresh keys (incr answers 1 first, rpush 1): runs must not share
// keys.
func TestPrimitiveRunsUseFreshKeys(t *testing.T) {
	const perRun = 2 * 4 * 3 // conns × depth × keys per slot
	for _, proto := range []Protocol{ProtoLine, ProtoRedis} {
		var n int
		growing(t, func(window time.Duration) (bool, string) {
			f := startFake(t, func(f *fakeServer) { f.redis = proto == ProtoRedis })
			defer f.close()
			cfg := quick(f.addr(), proto, Incr, 2, 4)
			cfg.KeysPerSlot = 3
			cfg.Duration = window
			mustRun(t, cfg)
			// Each run must have gone through every slot's keys (else a
			// longer window is tried) for the count below to mean anything.
			if primKeys(f, Incr) < perRun {
				return false, fmt.Sprintf("%v: %d counters after the first run", proto, primKeys(f, Incr))
			}
			mustRun(t, cfg) // would get "ok 2…" to the first incr of a reused key
			n = primKeys(f, Incr)
			return n >= 2*perRun, fmt.Sprintf("%v: %d counters after two runs", proto, n)
		})
		if n != 2*perRun {
			t.Errorf("%v: %d counters after two runs, want %d", proto, n, 2*perRun)
		}
	}
}

func TestPrimitiveWrongRepliesFail(t *testing.T) {
	cases := []struct {
		w     Workload
		cmd   string // the command whose reply is replaced
		reply string
		want  []string
	}{
		{Incr, "incr", "ok 5", []string{`unexpected reply "ok 5\n" to "incr bench.`, ".c0.s0.k0 1\"", "want 1"}},
		{Incr, "incr", "ok x", []string{"counter's new value"}},
		{Incr, "incr", "error", []string{`"error\n"`, "counter's new value"}},
		{KV, "kset", "ok 1", []string{`to "kset bench.`, "want ok"}},
		{KV, "kget", "nil", []string{`"nil\n" to "kget bench.`, ".c0.s0.k0 _\"", "value written just before"}},
		{KV, "kget", "ok 0123456789abcdef0123456789abcdef", []string{"value written just before"}},
		{List, "rpush", "ok 2", []string{`to "rpush bench.`, "length 1"}},
		{List, "lpop", "nil", []string{`to "lpop bench.`, "value written just before"}},
	}
	for _, tc := range cases {
		t.Run("dflockd/"+tc.cmd+"/"+tc.reply, func(t *testing.T) {
			f := startFake(t, func(f *fakeServer) {
				f.reply = func(n int64, cmd, key, arg string) (string, bool) {
					if cmd == tc.cmd {
						return tc.reply, false
					}
					return f.lockLogic(cmd, key, arg), false
				}
			})
			mustFail(t, quick(f.addr(), ProtoLine, tc.w, 1, 1), tc.want...) // ends at the error, not with the window
		})
	}
}

func TestPrimitiveWrongRESPRepliesFail(t *testing.T) {
	cases := []struct {
		w     Workload
		cmd   string
		reply string
		want  []string
	}{
		{Incr, "INCR", ":0\r\n", []string{`unexpected reply ":0\r\n" to "INCR bench.`, "want 1"}},
		{Incr, "INCR", "+OK\r\n", []string{"counter's new value"}},
		{KV, "SET", "-ERR oom\r\n", []string{`to "SET bench.`, "+OK"}},
		{KV, "GET", "$-1\r\n", []string{`to "GET bench.`, "value written just before"}},
		{KV, "GET", "$3\r\nabc\r\n", []string{"value written just before"}},
		{List, "RPUSH", ":2\r\n", []string{`to "RPUSH bench.`, "length 1"}},
		{List, "LPOP", "$-1\r\n", []string{`to "LPOP bench.`, "value written just before"}},
	}
	for _, tc := range cases {
		t.Run(tc.cmd+"/"+strings.TrimSpace(tc.reply), func(t *testing.T) {
			f := startFake(t, func(f *fakeServer) {
				f.redis = true
				f.respReply = func(args []string) string {
					if args[0] == tc.cmd {
						return tc.reply
					}
					return ""
				}
			})
			mustFail(t, quick(f.addr(), ProtoRedis, tc.w, 1, 1), tc.want...)
		})
	}
}
