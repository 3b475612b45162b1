package parse

import (
	"errors"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

func (r want) val(s string) want { r.Value = []byte(s); return r }
func (r want) old(s string) want { r.Old = []byte(s); return r }
func (r want) n(v int64) want    { r.N = v; return r }
func (r want) m(v int64) want    { r.M = v; return r }
func (r want) ttl(v int64) want  { r.TTL = v; return r }

// rfGrammarTests: the argument grammars of the redis-feats primitives
// (spec §B.4–B.12). Key validation is shared with the lock commands and
// covered by grammarTests; here only rf-specific key rules appear.
var rfGrammarTests = []grammarCase{
	// rl / wl / elect <timeout> [<lease>]: like l
	{name: "rl timeout", cmd: "rl", key: "k", arg: "0", want: ok(vocab.OpReadLock, "k")},
	{name: "rl timeout lease", cmd: "rl", key: "k", arg: "10 30", want: ok(vocab.OpReadLock, "k").tmo(10).lease(30)},
	{name: "wl timeout lease", cmd: "wl", key: "k", arg: "\t5\xc2\xa07 ", want: ok(vocab.OpWriteLock, "k").tmo(5).lease(7)},
	{name: "wl max seconds", cmd: "wl", key: "k", arg: "9223372036 9223372036", want: ok(vocab.OpWriteLock, "k").tmo(vocab.MaxSeconds).lease(vocab.MaxSeconds)},
	{name: "rl timeout overflow", cmd: "rl", key: "k", arg: "9223372037", err: ErrBadInteger},
	{name: "wl lease overflow", cmd: "wl", key: "k", arg: "0 9223372037", err: ErrBadInteger},
	{name: "rl negative", cmd: "rl", key: "k", arg: "-1", err: ErrNegativeTime},
	{name: "wl lease zero", cmd: "wl", key: "k", arg: "0 0", err: ErrBadLease},
	{name: "rl lease negative", cmd: "rl", key: "k", arg: "0 -5", err: ErrBadLease},
	{name: "rl empty", cmd: "rl", key: "k", arg: "", err: ErrArgCount},
	{name: "wl three fields", cmd: "wl", key: "k", arg: "1 2 3", err: ErrArgCount},
	{name: "rl letters", cmd: "rl", key: "k", arg: "x", err: ErrBadInteger},
	{name: "rl bad key", cmd: "rl", key: "a b", arg: "0", err: ErrBadKey},
	{name: "elect timeout", cmd: "elect", key: "e", arg: "5", want: ok(vocab.OpElect, "e").tmo(5)},
	{name: "elect timeout lease", cmd: "elect", key: "e", arg: "+0 +30", want: ok(vocab.OpElect, "e").lease(30)},
	{name: "elect negative", cmd: "elect", key: "e", arg: "-1 30", err: ErrNegativeTime},
	{name: "elect lease zero", cmd: "elect", key: "e", arg: "1 0", err: ErrBadLease},
	{name: "elect empty", cmd: "elect", key: "e", arg: " ", err: ErrArgCount},
	{name: "elect empty key", cmd: "elect", key: "", arg: "1", err: ErrBadKey},

	// rr / wr / resign <token>: like r, the whole line trimmed
	{name: "rr token", cmd: "rr", key: "k", arg: "tok", want: ok(vocab.OpReadRelease, "k").tok("tok")},
	{name: "wr trimmed", cmd: "wr", key: "k", arg: " \ttok\xc2\xa0", want: ok(vocab.OpWriteRelease, "k").tok("tok")},
	{name: "wr inner space kept", cmd: "wr", key: "k", arg: "a b", want: ok(vocab.OpWriteRelease, "k").tok("a b")},
	{name: "rr empty", cmd: "rr", key: "k", arg: "", err: ErrEmptyToken},
	{name: "wr blank", cmd: "wr", key: "k", arg: " \t", err: ErrEmptyToken},
	{name: "resign token", cmd: "resign", key: "e", arg: "tok 1", want: ok(vocab.OpResign, "e").tok("tok 1")},
	{name: "resign blank", cmd: "resign", key: "e", arg: "\u3000", err: ErrEmptyToken},
	{name: "resign bad key", cmd: "resign", key: "e\te", arg: "tok", err: ErrBadKey},

	// rn / wn <token> [<lease>]: like n
	{name: "rn token", cmd: "rn", key: "k", arg: "tok", want: ok(vocab.OpReadRenew, "k").tok("tok")},
	{name: "wn token lease", cmd: "wn", key: "k", arg: " tok  9 ", want: ok(vocab.OpWriteRenew, "k").tok("tok").lease(9)},
	{name: "rn lease zero", cmd: "rn", key: "k", arg: "tok 0", err: ErrBadLease},
	{name: "wn lease bad", cmd: "wn", key: "k", arg: "tok x", err: ErrBadInteger},
	{name: "rn lease overflow", cmd: "rn", key: "k", arg: "tok 9223372037", err: ErrBadInteger},
	{name: "rn empty", cmd: "rn", key: "k", arg: "", err: ErrArgCount},
	{name: "wn three fields", cmd: "wn", key: "k", arg: "tok 1 2", err: ErrArgCount},

	// re / we [<lease>]: like e
	{name: "re no lease", cmd: "re", key: "k", arg: "", want: ok(vocab.OpReadEnqueue, "k")},
	{name: "we lease", cmd: "we", key: "k", arg: " 30 ", want: ok(vocab.OpWriteEnqueue, "k").lease(30)},
	{name: "re lease zero", cmd: "re", key: "k", arg: "0", err: ErrBadLease},
	{name: "we lease bad", cmd: "we", key: "k", arg: "x", err: ErrBadInteger},
	{name: "re two fields", cmd: "re", key: "k", arg: "30 junk", err: ErrArgCount},

	// rw / ww / blpop / brpop <timeout>: like w
	{name: "rw timeout", cmd: "rw", key: "k", arg: "5", want: ok(vocab.OpReadWait, "k").tmo(5)},
	{name: "ww zero", cmd: "ww", key: "k", arg: "0", want: ok(vocab.OpWriteWait, "k")},
	{name: "rw empty", cmd: "rw", key: "k", arg: "", err: ErrArgCount},
	{name: "ww two fields", cmd: "ww", key: "k", arg: "1 2", err: ErrArgCount},
	{name: "rw negative", cmd: "rw", key: "k", arg: "-1", err: ErrNegativeTime},
	{name: "blpop timeout", cmd: "blpop", key: "q", arg: "\xc2\xa05", want: ok(vocab.OpBLPop, "q").tmo(5)},
	{name: "brpop zero", cmd: "brpop", key: "q", arg: "0", want: ok(vocab.OpBRPop, "q")},
	{name: "blpop max seconds", cmd: "blpop", key: "q", arg: "9223372036", want: ok(vocab.OpBLPop, "q").tmo(vocab.MaxSeconds)},
	{name: "blpop overflow", cmd: "blpop", key: "q", arg: "9223372037", err: ErrBadInteger},
	{name: "brpop negative", cmd: "brpop", key: "q", arg: "-3", err: ErrNegativeTime},
	{name: "blpop empty", cmd: "blpop", key: "q", arg: "", err: ErrArgCount},
	{name: "brpop two fields", cmd: "brpop", key: "q", arg: "1 2", err: ErrArgCount},
	{name: "blpop word", cmd: "blpop", key: "q", arg: "soon", err: ErrBadInteger},

	// incr / decr / cset <int64>: the whole line trimmed (§B.5)
	{name: "incr", cmd: "incr", key: "c", arg: "5", want: ok(vocab.OpIncr, "c").n(5)},
	{name: "incr trimmed", cmd: "incr", key: "c", arg: " 3 ", want: ok(vocab.OpIncr, "c").n(3)},
	{name: "incr NBSP trimmed", cmd: "incr", key: "c", arg: "\xc2\xa07\t", want: ok(vocab.OpIncr, "c").n(7)},
	{name: "incr negative", cmd: "incr", key: "c", arg: "-10", want: ok(vocab.OpIncr, "c").n(-10)},
	{name: "incr plus", cmd: "incr", key: "c", arg: "+2", want: ok(vocab.OpIncr, "c").n(2)},
	{name: "incr zero", cmd: "incr", key: "c", arg: "0", want: ok(vocab.OpIncr, "c")},
	{name: "incr int64 max", cmd: "incr", key: "c", arg: "9223372036854775807", want: ok(vocab.OpIncr, "c").n(1<<63 - 1)},
	{name: "incr int64 overflow", cmd: "incr", key: "c", arg: "9223372036854775808", err: ErrBadInteger},
	{name: "incr empty", cmd: "incr", key: "c", arg: "", err: ErrBadInteger},
	{name: "incr blank", cmd: "incr", key: "c", arg: "  ", err: ErrBadInteger},
	{name: "incr two fields", cmd: "incr", key: "c", arg: "1 2", err: ErrBadInteger},
	{name: "incr letters", cmd: "incr", key: "c", arg: "abc", err: ErrBadInteger},
	{name: "incr empty key", cmd: "incr", key: "", arg: "1", err: ErrBadKey},
	{name: "decr", cmd: "decr", key: "c", arg: "2", want: ok(vocab.OpDecr, "c").n(2)},
	{name: "decr negative", cmd: "decr", key: "c", arg: "-1", want: ok(vocab.OpDecr, "c").n(-1)},
	{name: "decr int64 min parses", cmd: "decr", key: "c", arg: "-9223372036854775808", want: ok(vocab.OpDecr, "c").n(-1 << 63)},
	{name: "decr below int64 min", cmd: "decr", key: "c", arg: "-9223372036854775809", err: ErrBadInteger},
	{name: "decr decimal", cmd: "decr", key: "c", arg: "1.5", err: ErrBadInteger},
	{name: "cset", cmd: "cset", key: "c", arg: "42", want: ok(vocab.OpCSet, "c").n(42)},
	{name: "cset negative", cmd: "cset", key: "c", arg: "-7", want: ok(vocab.OpCSet, "c").n(-7)},
	{name: "cset int64 min", cmd: "cset", key: "c", arg: "-9223372036854775808", want: ok(vocab.OpCSet, "c").n(-1 << 63)},
	{name: "cset overflow", cmd: "cset", key: "c", arg: "9223372036854775808", err: ErrBadInteger},
	{name: "cset empty", cmd: "cset", key: "c", arg: "", err: ErrBadInteger},
	{name: "cset hex", cmd: "cset", key: "c", arg: "0x10", err: ErrBadInteger},

	// get, kget, kdel, lpop, rpop, llen, watch, unwatch, observe, unobserve: arg ignored
	{name: "get empty", cmd: "get", key: "c", arg: "", want: ok(vocab.OpGet, "c")},
	{name: "get junk", cmd: "get", key: "c", arg: "1 2 x", want: ok(vocab.OpGet, "c")},
	{name: "get bad key", cmd: "get", key: "a b", arg: "", err: ErrBadKey},
	{name: "kget", cmd: "kget", key: "k", arg: "_", want: ok(vocab.OpKGet, "k")},
	{name: "kdel", cmd: "kdel", key: "k", arg: "\t", want: ok(vocab.OpKDel, "k")},
	{name: "lpop", cmd: "lpop", key: "q", arg: "", want: ok(vocab.OpLPop, "q")},
	{name: "rpop", cmd: "rpop", key: "q", arg: "-1", want: ok(vocab.OpRPop, "q")},
	{name: "llen", cmd: "llen", key: "q", arg: "x y", want: ok(vocab.OpLLen, "q")},
	{name: "watch pattern", cmd: "watch", key: "a.*.>", arg: "", want: ok(vocab.OpWatch, "a.*.>")},
	{name: "unwatch", cmd: "unwatch", key: ">", arg: "junk", want: ok(vocab.OpUnwatch, ">")},
	{name: "observe", cmd: "observe", key: "e", arg: "_", want: ok(vocab.OpObserve, "e")},
	{name: "unobserve", cmd: "unobserve", key: "e", arg: "", want: ok(vocab.OpUnobserve, "e")},
	{name: "watch empty key", cmd: "watch", key: "", arg: "", err: ErrBadKey},
	// their only failure is a bad key
	{name: "kget bad key", cmd: "kget", key: "k k", arg: "", err: ErrBadKey},
	{name: "kdel bad key", cmd: "kdel", key: "", arg: "", err: ErrBadKey},
	{name: "lpop bad key", cmd: "lpop", key: "q\r", arg: "", err: ErrBadKey},
	{name: "rpop bad key", cmd: "rpop", key: " q", arg: "", err: ErrBadKey},
	{name: "llen bad key", cmd: "llen", key: "q\tq", arg: "", err: ErrBadKey},
	{name: "unwatch bad key", cmd: "unwatch", key: "a b", arg: "", err: ErrBadKey},
	{name: "observe bad key", cmd: "observe", key: "", arg: "", err: ErrBadKey},
	{name: "unobserve bad key", cmd: "unobserve", key: "e\n", arg: "", err: ErrBadKey},

	// kset <value> | <value>\t<ttl> (§B.6): raw, not trimmed
	{name: "kset value", cmd: "kset", key: "k", arg: "hello", want: ok(vocab.OpKSet, "k").val("hello")},
	{name: "kset value with spaces", cmd: "kset", key: "k", arg: "  padded ", want: ok(vocab.OpKSet, "k").val("  padded ")},
	{name: "kset blank value", cmd: "kset", key: "k", arg: " ", want: ok(vocab.OpKSet, "k").val(" ")},
	{name: "kset numeric-looking value", cmd: "kset", key: "k", arg: "1 2", want: ok(vocab.OpKSet, "k").val("1 2")},
	{name: "kset value ttl", cmd: "kset", key: "k", arg: "v1\t1", want: ok(vocab.OpKSet, "k").val("v1").ttl(1)},
	{name: "kset ttl zero", cmd: "kset", key: "k", arg: "keep\t0", want: ok(vocab.OpKSet, "k").val("keep")},
	{name: "kset ttl plus", cmd: "kset", key: "k", arg: "v\t+5", want: ok(vocab.OpKSet, "k").val("v").ttl(5)},
	{name: "kset ttl -0", cmd: "kset", key: "k", arg: "v\t-0", want: ok(vocab.OpKSet, "k").val("v")},
	{name: "kset ttl max", cmd: "kset", key: "k", arg: "v\t9223372036", want: ok(vocab.OpKSet, "k").val("v").ttl(vocab.MaxSeconds)},
	{name: "kset spaced value ttl", cmd: "kset", key: "k", arg: " a b \t7", want: ok(vocab.OpKSet, "k").val(" a b ").ttl(7)},
	{name: "kset empty", cmd: "kset", key: "k", arg: "", err: ErrArgCount},
	{name: "kset TAB at start", cmd: "kset", key: "k", arg: "\t5", err: ErrArgCount},
	{name: "kset TAB only", cmd: "kset", key: "k", arg: "\t", err: ErrArgCount},
	{name: "kset second TAB", cmd: "kset", key: "k", arg: "v\t5\t6", err: ErrArgCount},
	{name: "kset trailing second TAB", cmd: "kset", key: "k", arg: "v\t5\t", err: ErrArgCount},
	{name: "kset empty ttl", cmd: "kset", key: "k", arg: "v\t", err: ErrBadInteger},
	{name: "kset negative ttl", cmd: "kset", key: "k", arg: "v\t-1", err: ErrBadInteger},
	{name: "kset word ttl", cmd: "kset", key: "k", arg: "v\tabc", err: ErrBadInteger},
	{name: "kset ttl not trimmed", cmd: "kset", key: "k", arg: "v\t 5", err: ErrBadInteger},
	{name: "kset ttl trailing space", cmd: "kset", key: "k", arg: "v\t5 ", err: ErrBadInteger},
	{name: "kset ttl over max seconds", cmd: "kset", key: "k", arg: "v\t9223372037", err: ErrBadInteger},
	{name: "kset ttl int64 overflow", cmd: "kset", key: "k", arg: "v\t9223372036854775808", err: ErrBadInteger},
	{name: "kset bad key", cmd: "kset", key: "a\tb", arg: "v", err: ErrBadKey},

	// kcas <old>\t<new>\t<ttl> (§B.6): exactly two TABs
	{name: "kcas create", cmd: "kcas", key: "k", arg: "\tv1\t0", want: ok(vocab.OpKCAS, "k").val("v1")},
	{name: "kcas create empty ttl", cmd: "kcas", key: "k", arg: "\tv1\t", want: ok(vocab.OpKCAS, "k").val("v1")},
	{name: "kcas swap", cmd: "kcas", key: "k", arg: "v1\tv2\t", want: ok(vocab.OpKCAS, "k").old("v1").val("v2")},
	{name: "kcas swap ttl", cmd: "kcas", key: "k", arg: "v1\tv2\t30", want: ok(vocab.OpKCAS, "k").old("v1").val("v2").ttl(30)},
	{name: "kcas spaces kept", cmd: "kcas", key: "k", arg: " a \t b \t", want: ok(vocab.OpKCAS, "k").old(" a ").val(" b ")},
	{name: "kcas ttl max", cmd: "kcas", key: "k", arg: "a\tb\t9223372036", want: ok(vocab.OpKCAS, "k").old("a").val("b").ttl(vocab.MaxSeconds)},
	{name: "kcas empty new", cmd: "kcas", key: "k", arg: "v2\t\t0", err: ErrArgCount},
	{name: "kcas empty new and old", cmd: "kcas", key: "k", arg: "\t\t", err: ErrArgCount},
	{name: "kcas one TAB", cmd: "kcas", key: "k", arg: "v2\tv3", err: ErrArgCount},
	{name: "kcas no TAB", cmd: "kcas", key: "k", arg: "v2", err: ErrArgCount},
	{name: "kcas empty", cmd: "kcas", key: "k", arg: "", err: ErrArgCount},
	{name: "kcas three TABs", cmd: "kcas", key: "k", arg: "v2\tv3\t0\t", err: ErrArgCount},
	{name: "kcas three TABs empty ttl", cmd: "kcas", key: "k", arg: "a\tb\t\t", err: ErrArgCount},
	{name: "kcas negative ttl", cmd: "kcas", key: "k", arg: "a\tb\t-1", err: ErrBadInteger},
	{name: "kcas word ttl", cmd: "kcas", key: "k", arg: "a\tb\tx", err: ErrBadInteger},
	{name: "kcas ttl not trimmed", cmd: "kcas", key: "k", arg: "a\tb\t 1", err: ErrBadInteger},
	{name: "kcas ttl over max seconds", cmd: "kcas", key: "k", arg: "a\tb\t9223372037", err: ErrBadInteger},
	{name: "kcas empty new before bad ttl", cmd: "kcas", key: "k", arg: "a\t\tx", err: ErrArgCount},

	// lpush / rpush <value>: raw, non-empty (§B.7)
	{name: "lpush", cmd: "lpush", key: "q", arg: "job", want: ok(vocab.OpLPush, "q").val("job")},
	{name: "rpush spaces kept", cmd: "rpush", key: "q", arg: " a b ", want: ok(vocab.OpRPush, "q").val(" a b ")},
	{name: "rpush blank value", cmd: "rpush", key: "q", arg: "\t", want: ok(vocab.OpRPush, "q").val("\t")},
	{name: "lpush TAB kept", cmd: "lpush", key: "q", arg: "a\tb", want: ok(vocab.OpLPush, "q").val("a\tb")},
	{name: "lpush empty", cmd: "lpush", key: "q", arg: "", err: ErrArgCount},
	{name: "rpush empty", cmd: "rpush", key: "q", arg: "", err: ErrArgCount},
	{name: "rpush bad key", cmd: "rpush", key: "q q", arg: "x", err: ErrBadKey},

	// lrange <start> <stop>
	{name: "lrange", cmd: "lrange", key: "q", arg: "0 -1", want: ok(vocab.OpLRange, "q").m(-1)},
	{name: "lrange blanks", cmd: "lrange", key: "q", arg: " 2\xc2\xa0 5 ", want: ok(vocab.OpLRange, "q").n(2).m(5)},
	{name: "lrange negatives", cmd: "lrange", key: "q", arg: "-3 -2", want: ok(vocab.OpLRange, "q").n(-3).m(-2)},
	{name: "lrange int64 extremes", cmd: "lrange", key: "q", arg: "-9223372036854775808 9223372036854775807", want: ok(vocab.OpLRange, "q").n(-1 << 63).m(1<<63 - 1)},
	{name: "lrange one field", cmd: "lrange", key: "q", arg: "0", err: ErrArgCount},
	{name: "lrange empty", cmd: "lrange", key: "q", arg: "", err: ErrArgCount},
	{name: "lrange three fields", cmd: "lrange", key: "q", arg: "0 1 2", err: ErrArgCount},
	{name: "lrange bad start", cmd: "lrange", key: "q", arg: "a 1", err: ErrBadInteger},
	{name: "lrange bad stop", cmd: "lrange", key: "q", arg: "0 1.0", err: ErrBadInteger},
	{name: "lrange overflow", cmd: "lrange", key: "q", arg: "0 9223372036854775808", err: ErrBadInteger},

	// listen / unlisten [<group>]: trimmed, empty = none (§B.9)
	{name: "listen", cmd: "listen", key: "a.b", arg: "", want: ok(vocab.OpListen, "a.b")},
	{name: "listen blank", cmd: "listen", key: "a.*", arg: " \t", want: ok(vocab.OpListen, "a.*")},
	{name: "listen group", cmd: "listen", key: ">", arg: " workers ", want: ok(vocab.OpListen, ">").val("workers")},
	{name: "listen group inner space", cmd: "listen", key: "c", arg: "g 1", want: ok(vocab.OpListen, "c").val("g 1")},
	{name: "unlisten group", cmd: "unlisten", key: "a.>", arg: "\xc2\xa0g\xc2\xa0", want: ok(vocab.OpUnlisten, "a.>").val("g")},
	{name: "unlisten", cmd: "unlisten", key: "c", arg: "", want: ok(vocab.OpUnlisten, "c")},
	{name: "listen bad key", cmd: "listen", key: "", arg: "g", err: ErrBadKey},
	{name: "unlisten bad key", cmd: "unlisten", key: "a .b", arg: "", err: ErrBadKey},

	// signal <payload> to one literal channel (§A.3, §B.9)
	{name: "signal", cmd: "signal", key: "a.b", arg: "hello", want: ok(vocab.OpSignal, "a.b").val("hello")},
	{name: "signal raw payload", cmd: "signal", key: "c", arg: " x\ty ", want: ok(vocab.OpSignal, "c").val(" x\ty ")},
	{name: "signal blank payload", cmd: "signal", key: "c", arg: " ", want: ok(vocab.OpSignal, "c").val(" ")},
	{name: "signal empty payload", cmd: "signal", key: "c", arg: "", err: ErrArgCount},
	{name: "signal star", cmd: "signal", key: "a.*", arg: "x", err: ErrBadKey},
	{name: "signal gt", cmd: "signal", key: "a.>", arg: "x", err: ErrBadKey},
	{name: "signal star inside token", cmd: "signal", key: "a*b", arg: "x", err: ErrBadKey},
	{name: "signal pattern before payload", cmd: "signal", key: ">", arg: "", err: ErrBadKey},
	{name: "signal spaced key", cmd: "signal", key: "a b", arg: "x", err: ErrBadKey},

	// bwait <count> <timeout> (§B.11)
	{name: "bwait", cmd: "bwait", key: "b", arg: "3 10", want: ok(vocab.OpBWait, "b").n(3).tmo(10)},
	{name: "bwait zero timeout", cmd: "bwait", key: "b", arg: " 1\t0 ", want: ok(vocab.OpBWait, "b").n(1)},
	{name: "bwait max timeout", cmd: "bwait", key: "b", arg: "2 9223372036", want: ok(vocab.OpBWait, "b").n(2).tmo(vocab.MaxSeconds)},
	{name: "bwait huge count", cmd: "bwait", key: "b", arg: "9223372036854775807 1", want: ok(vocab.OpBWait, "b").n(1<<63 - 1).tmo(1)},
	{name: "bwait count zero", cmd: "bwait", key: "b", arg: "0 10", err: ErrBadLimit},
	{name: "bwait count negative", cmd: "bwait", key: "b", arg: "-2 10", err: ErrBadLimit},
	{name: "bwait count word", cmd: "bwait", key: "b", arg: "two 10", err: ErrBadInteger},
	{name: "bwait count overflow", cmd: "bwait", key: "b", arg: "9223372036854775808 10", err: ErrBadInteger},
	{name: "bwait count before timeout", cmd: "bwait", key: "b", arg: "0 -1", err: ErrBadLimit},
	{name: "bwait negative timeout", cmd: "bwait", key: "b", arg: "2 -1", err: ErrNegativeTime},
	{name: "bwait timeout overflow", cmd: "bwait", key: "b", arg: "2 9223372037", err: ErrBadInteger},
	{name: "bwait timeout word", cmd: "bwait", key: "b", arg: "2 x", err: ErrBadInteger},
	{name: "bwait one field", cmd: "bwait", key: "b", arg: "2", err: ErrArgCount},
	{name: "bwait three fields", cmd: "bwait", key: "b", arg: "2 1 0", err: ErrArgCount},
	{name: "bwait empty", cmd: "bwait", key: "b", arg: "", err: ErrArgCount},

	// commands are case-sensitive words
	{name: "INCR unknown", cmd: "INCR", key: "c", arg: "1", err: ErrUnknownCommand},
	{name: "kset trailing space unknown", cmd: "kset ", key: "k", arg: "v", err: ErrUnknownCommand},
}

func TestParseRFGrammar(t *testing.T) { runGrammar(t, rfGrammarTests) }

// TestParseRFCoverage: every rf command has valid and invalid rows.
func TestParseRFCoverage(t *testing.T) {
	valid, invalid := map[vocab.Op]bool{}, map[vocab.Op]bool{}
	for _, tc := range rfGrammarTests {
		if tc.err == nil {
			valid[vocab.Named([]byte(tc.cmd))] = true
		} else {
			invalid[vocab.Named([]byte(tc.cmd))] = true
		}
	}
	for op := vocab.OpReadLock; int(op) < vocab.NumOps; op++ {
		if !valid[op] {
			t.Errorf("no valid row for %v", op)
		}
		if !invalid[op] {
			t.Errorf("no invalid row for %v", op)
		}
	}
}

// TestParseRFAliases: values alias the frame like keys and tokens do.
func TestParseRFAliases(t *testing.T) {
	arg := []byte("old\tnew\t5")
	r, err := Parse(Frame{Cmd: []byte("kcas"), Key: []byte("k"), Arg: arg})
	if err != nil || &r.Old[0] != &arg[0] || &r.Value[0] != &arg[4] {
		t.Fatalf("kcas Old/Value do not alias the frame (err %v)", err)
	}
	arg = []byte(" g ")
	r, err = Parse(Frame{Cmd: []byte("listen"), Key: []byte("c"), Arg: arg})
	if err != nil || &r.Value[0] != &arg[1] {
		t.Fatalf("listen group does not alias the frame (err %v)", err)
	}
}

func TestOpReadWrite(t *testing.T) {
	for op := vocab.Op(0); int(op) < vocab.NumOps; op++ {
		name := op.String()
		rw := len(name) == 2 && (name[0] == 'r' || name[0] == 'w') && strings.ContainsRune("lrnew", rune(name[1]))
		if op.ReadWrite() != rw {
			t.Errorf("%v.ReadWrite() = %v", op, op.ReadWrite())
		}
		if w := rw && name[0] == 'w'; op.Writer() != w {
			t.Errorf("%v.Writer() = %v", op, op.Writer())
		}
	}
}

// TestParseRFScenarios replays the parse-level half of the black-box
// scenarios in conformance/scenarios/rf-counter.txt and rf-kv.txt: every
// step answered "error" there must be a Parse error, every other step must
// parse.
func TestParseRFScenarios(t *testing.T) {
	tests := []struct {
		scenario string
		raw      string
		want     want
		err      error
	}{
		{"counter.basic", "get\n@c\n\n", ok(vocab.OpGet, "@c"), nil},
		{"counter.basic", "incr\n@c\n 3 \n", ok(vocab.OpIncr, "@c").n(3), nil},
		{"counter.basic", "incr\n@c\n-10\n", ok(vocab.OpIncr, "@c").n(-10), nil},
		{"counter.basic", "decr\n@c\n-1\n", ok(vocab.OpDecr, "@c").n(-1), nil},
		{"counter.basic", "cset\n@c\n-7\n", ok(vocab.OpCSet, "@c").n(-7), nil},
		{"counter.overflow", "cset\n@c\n9223372036854775807\n", ok(vocab.OpCSet, "@c").n(1<<63 - 1), nil},
		{"counter.overflow", "cset\n@d\n-9223372036854775808\n", ok(vocab.OpCSet, "@d").n(-1 << 63), nil},
		{"counter.overflow", "decr\n@e\n-9223372036854775808\n", ok(vocab.OpDecr, "@e").n(-1 << 63), nil}, // error is the engine's
		{"counter.overflow", "cset\n@e\n9223372036854775808\n", want{}, ErrBadInteger},
		{"counter.bad-args", "incr\n@c\n\n", want{}, ErrBadInteger},
		{"counter.bad-args", "incr\n@c\nabc\n", want{}, ErrBadInteger},
		{"counter.bad-args", "incr\n@c\n1 2\n", want{}, ErrBadInteger},
		{"counter.bad-args", "decr\n@c\n1.5\n", want{}, ErrBadInteger},
		{"counter.bad-args", "cset\n@c\n\n", want{}, ErrBadInteger},
		{"counter.bad-args", "incr\n\n1\n", want{}, ErrBadKey},
		{"counter.bad-args", "incr\n@c\n1\r\n", ok(vocab.OpIncr, "@c").n(1), nil},
		{"kv.set-get-del", "kset\n@k\nhello world\n", ok(vocab.OpKSet, "@k").val("hello world"), nil},
		{"kv.set-get-del", "kset\n@k\n  padded \n", ok(vocab.OpKSet, "@k").val("  padded "), nil},
		{"kv.set-get-del", "kget\n@k\n_\n", ok(vocab.OpKGet, "@k"), nil},
		{"kv.set-get-del", "kdel\n@k\n\n", ok(vocab.OpKDel, "@k"), nil},
		{"kv.ttl-expiry", "kset\n@k\nv1\t1\n", ok(vocab.OpKSet, "@k").val("v1").ttl(1), nil},
		{"kv.ttl-expiry", "kset\n@p\nkeep\t0\n", ok(vocab.OpKSet, "@p").val("keep"), nil},
		{"kv.parse-errors", "kset\n@k\n\n", want{}, ErrArgCount},
		{"kv.parse-errors", "kset\n@k\n\t5\n", want{}, ErrArgCount},
		{"kv.parse-errors", "kset\n@k\nv\t-1\n", want{}, ErrBadInteger},
		{"kv.parse-errors", "kset\n@k\nv\tabc\n", want{}, ErrBadInteger},
		{"kv.parse-errors", "kset\n@k\nv\t5\t6\n", want{}, ErrArgCount},
		{"kv.parse-errors", "kset\n@k\nv\t 5\n", want{}, ErrBadInteger},
		{"kv.parse-errors", "kset\n@k\nv\t5\r\n", ok(vocab.OpKSet, "@k").val("v").ttl(5), nil},
		{"kv.cas", "kcas\n@k\n\tv1\t0\n", ok(vocab.OpKCAS, "@k").val("v1"), nil},
		{"kv.cas", "kcas\n@k\nwrong\tv2\t\n", ok(vocab.OpKCAS, "@k").old("wrong").val("v2"), nil},
		{"kv.cas", "kcas\n@k\nv1\tv2\t\n", ok(vocab.OpKCAS, "@k").old("v1").val("v2"), nil},
		{"kv.cas", "kcas\n@k\nv2\t\t0\n", want{}, ErrArgCount},
		{"kv.cas", "kcas\n@k\nv2\tv3\n", want{}, ErrArgCount},
		{"kv.cas", "kcas\n@k\nv2\tv3\t0\t\n", want{}, ErrArgCount},
		{"kv.cas-ttl", "kcas\n@k\n\tv1\t1\n", ok(vocab.OpKCAS, "@k").val("v1").ttl(1), nil},
	}
	for _, tc := range tests {
		f, n, err := Next([]byte(tc.raw))
		if err != nil || n != len(tc.raw) {
			t.Errorf("%s %q: Next = %d, %v", tc.scenario, tc.raw, n, err)
			continue
		}
		r, err := Parse(f)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s %q: Parse error %v, want %v", tc.scenario, tc.raw, err, tc.err)
			continue
		}
		if err == nil && !sameRequest(r, vocab.Request(tc.want)) {
			t.Errorf("%s %q: Parse = %s, want %s", tc.scenario, tc.raw, requestString(r), requestString(vocab.Request(tc.want)))
		}
	}
}
