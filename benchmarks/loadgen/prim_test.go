package loadgen

import (
	"strings"
	"testing"
	"time"
)

func TestPrimitiveWorkloadsAcceptCorrectReplies(t *testing.T) {
	const conns, keys = 3, 8
	for _, proto := range []Protocol{ProtoLine, ProtoRedis} {
		for _, w := range []Workload{Incr, KV, List} {
			for _, depth := range []int{1, 8} {
				f := startFake(t, func(f *fakeServer) { f.redis = proto == ProtoRedis })
				res := mustRun(t, quick(f.addr(), proto, w, conns, depth))
				name := proto.String() + "/" + string(w)
				if res.Pairs == 0 || f.rejected.Load() != 0 {
					t.Errorf("%s d=%d: cycles=%d rejected=%d", name, depth, res.Pairs, f.rejected.Load())
				}
				// The fake may still be answering the last requests.
				f.mu.Lock()
				p := &f.prim
				// Every slot went through its keys several times in the
				// window: the load is spread over conns × depth × keys keys.
				var n int
				switch w {
				case Incr:
					n = len(p.counters)
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
				case KV:
					n = len(p.kv)
				case List:
					n = len(p.lists)
					for k, l := range p.lists {
						if len(l) > 1 { // one item at most: a run cut between push and pop
							t.Errorf("%s d=%d: list %s holds %d items", name, depth, k, len(l))
						}
					}
				}
				f.mu.Unlock()
				if want := conns * depth * keys; n != want {
					t.Errorf("%s d=%d: %d distinct keys, want %d", name, depth, n, want)
				}
			}
		}
	}
}

// Counters, KV entries and lists outlive a run, and the replies are checked
// against fresh keys (incr answers 1 first, rpush 1): runs must not share
// keys.
func TestPrimitiveRunsUseFreshKeys(t *testing.T) {
	for _, proto := range []Protocol{ProtoLine, ProtoRedis} {
		f := startFake(t, func(f *fakeServer) { f.redis = proto == ProtoRedis })
		cfg := quick(f.addr(), proto, Incr, 2, 4)
		cfg.KeysPerSlot = 3
		mustRun(t, cfg)
		mustRun(t, cfg) // would get "ok 2…" to the first incr of a reused key
		f.mu.Lock()
		n := len(f.prim.counters)
		f.mu.Unlock()
		if want := 2 * 2 * 4 * 3; n != want {
			t.Errorf("%v: %d counters after two runs, want %d", proto, n, want)
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
			cfg := quick(f.addr(), ProtoLine, tc.w, 1, 1)
			cfg.Duration = 2 * time.Second // an error must end the run long before this
			began := time.Now()
			mustFail(t, cfg, tc.want...)
			if el := time.Since(began); el > time.Second {
				t.Errorf("the run took %v to fail", el)
			}
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
