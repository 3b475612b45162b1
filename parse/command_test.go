package parse

import (
	"errors"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

type grammarCase struct {
	name          string
	cmd, key, arg string
	want          want // compared only when err is nil
	err           error
}

// want is the expected Request of a case, built by chaining.
type want vocab.Request

// ok builds the expected Request of a keyed command.
func ok(op vocab.Op, key string) want { return want{Op: op, Key: []byte(key)} }

func (r want) tok(s string) want            { r.Token = []byte(s); return r }
func (r want) tmo(v int64) want             { r.Timeout = v; return r }
func (r want) lease(v int64) want           { r.Lease = v; return r }
func (r want) limit(v int64) want           { r.Limit = v; return r }
func keyless(op vocab.Op) want              { return want{Op: op} }
func keylessTok(op vocab.Op, s string) want { return keyless(op).tok(s) }

var grammarTests = []grammarCase{
	// l <timeout> [<lease>]
	{name: "l timeout", cmd: "l", key: "k", arg: "0", want: ok(vocab.OpLock, "k")},
	{name: "l timeout lease", cmd: "l", key: "k", arg: "10 30", want: ok(vocab.OpLock, "k").tmo(10).lease(30)},
	{name: "l blanks", cmd: "l", key: "k", arg: "  0\t 5 ", want: ok(vocab.OpLock, "k").lease(5)},
	{name: "l VT FF CR separators", cmd: "l", key: "k", arg: "\v1\f2\r", want: ok(vocab.OpLock, "k").tmo(1).lease(2)},
	{name: "l plus signs", cmd: "l", key: "k", arg: "+0 +5", want: ok(vocab.OpLock, "k").lease(5)},
	{name: "l leading zeros", cmd: "l", key: "k", arg: "007 0030", want: ok(vocab.OpLock, "k").tmo(7).lease(30)},
	{name: "l minus zero", cmd: "l", key: "k", arg: "-0 5", want: ok(vocab.OpLock, "k").lease(5)},
	{name: "l NBSP separator", cmd: "l", key: "k", arg: "0\xc2\xa07", want: ok(vocab.OpLock, "k").lease(7)},
	{name: "l NEL separator", cmd: "l", key: "k", arg: "1\xc2\x852", want: ok(vocab.OpLock, "k").tmo(1).lease(2)},
	{name: "l ideographic space", cmd: "l", key: "k", arg: "1\u30002", want: ok(vocab.OpLock, "k").tmo(1).lease(2)},
	{name: "l em space + LS", cmd: "l", key: "k", arg: "\u20031\u20282\u2029", want: ok(vocab.OpLock, "k").tmo(1).lease(2)},
	{name: "l max seconds", cmd: "l", key: "k", arg: "9223372036 9223372036", want: ok(vocab.OpLock, "k").tmo(vocab.MaxSeconds).lease(vocab.MaxSeconds)},
	{name: "l timeout overflow", cmd: "l", key: "k", arg: "9223372037 5", err: ErrBadInteger},
	{name: "l lease overflow", cmd: "l", key: "k", arg: "0 9223372037", err: ErrBadInteger},
	{name: "l int64 max", cmd: "l", key: "k", arg: "9223372036854775807", err: ErrBadInteger},
	{name: "l int64 overflow", cmd: "l", key: "k", arg: "9223372036854775808", err: ErrBadInteger},
	{name: "l huge", cmd: "l", key: "k", arg: "99999999999999999999", err: ErrBadInteger},
	{name: "l negative", cmd: "l", key: "k", arg: "-1", err: ErrNegativeTime},
	{name: "l negative with lease", cmd: "l", key: "k", arg: "-1 5", err: ErrNegativeTime},
	{name: "l int64 min", cmd: "l", key: "k", arg: "-9223372036854775808", err: ErrNegativeTime},
	{name: "l below int64 min", cmd: "l", key: "k", arg: "-9223372036854775809", err: ErrBadInteger},
	{name: "l negative timeout before bad lease", cmd: "l", key: "k", arg: "-1 x", err: ErrNegativeTime},
	{name: "l bad timeout before bad lease", cmd: "l", key: "k", arg: "x 0", err: ErrBadInteger},
	{name: "l lease zero", cmd: "l", key: "k", arg: "0 0", err: ErrBadLease},
	{name: "l lease negative", cmd: "l", key: "k", arg: "0 -3", err: ErrBadLease},
	{name: "l lease -0", cmd: "l", key: "k", arg: "0 -0", err: ErrBadLease},
	{name: "l lease huge negative", cmd: "l", key: "k", arg: "0 -99999999999", err: ErrBadLease},
	{name: "l lease below int64", cmd: "l", key: "k", arg: "0 -99999999999999999999", err: ErrBadInteger},
	{name: "l empty", cmd: "l", key: "k", arg: "", err: ErrArgCount},
	{name: "l blank", cmd: "l", key: "k", arg: " \t\xc2\xa0", err: ErrArgCount},
	{name: "l three fields", cmd: "l", key: "k", arg: "1 2 3", err: ErrArgCount},
	{name: "l many fields", cmd: "l", key: "k", arg: "1 2 3 4 5 6", err: ErrArgCount},
	{name: "l letters", cmd: "l", key: "k", arg: "abc", err: ErrBadInteger},
	{name: "l decimal point", cmd: "l", key: "k", arg: "1.5", err: ErrBadInteger},
	{name: "l hex", cmd: "l", key: "k", arg: "0x10", err: ErrBadInteger},
	{name: "l unit suffix", cmd: "l", key: "k", arg: "0 5s", err: ErrBadInteger},
	{name: "l sign only", cmd: "l", key: "k", arg: "+", err: ErrBadInteger},
	{name: "l minus only", cmd: "l", key: "k", arg: "-", err: ErrBadInteger},
	{name: "l double sign", cmd: "l", key: "k", arg: "+-1", err: ErrBadInteger},
	{name: "l underscore", cmd: "l", key: "k", arg: "1_000", err: ErrBadInteger},
	{name: "l exponent", cmd: "l", key: "k", arg: "1e3", err: ErrBadInteger},
	{name: "l Arabic-Indic digit", cmd: "l", key: "k", arg: "\u0663", err: ErrBadInteger},
	{name: "l fullwidth digit", cmd: "l", key: "k", arg: "\uff11", err: ErrBadInteger},
	{name: "l zero-width space is no separator", cmd: "l", key: "k", arg: "0\u200b5", err: ErrBadInteger},
	{name: "l lone 0x85 is no separator", cmd: "l", key: "k", arg: "0\x855", err: ErrBadInteger},
	{name: "l lone 0xa0 is no separator", cmd: "l", key: "k", arg: "0\xa05", err: ErrBadInteger},
	{name: "l invalid UTF-8", cmd: "l", key: "k", arg: "0 \xff", err: ErrBadInteger},
	{name: "l NUL", cmd: "l", key: "k", arg: "0\x00", err: ErrBadInteger},
	{name: "l 0x1c is no separator", cmd: "l", key: "k", arg: "0\x1c5", err: ErrBadInteger},

	// keys (checked for every keyed op, before the arguments)
	{name: "key empty", cmd: "l", key: "", arg: "0 5", err: ErrBadKey},
	{name: "key blanks", cmd: "l", key: "  ", arg: "0 5", err: ErrBadKey},
	{name: "key inner space", cmd: "l", key: "a b", arg: "0 5", err: ErrBadKey},
	{name: "key inner TAB", cmd: "l", key: "a\tb", arg: "0 5", err: ErrBadKey},
	{name: "key inner CR", cmd: "l", key: "a\rb", arg: "0 5", err: ErrBadKey},
	{name: "key trailing CR", cmd: "l", key: "a\r", arg: "0 5", err: ErrBadKey},
	{name: "key LF", cmd: "l", key: "a\nb", arg: "0 5", err: ErrBadKey},
	{name: "key leading space", cmd: "l", key: " a", arg: "0 5", err: ErrBadKey},
	{name: "key checked before args", cmd: "l", key: "a b", arg: "x y z", err: ErrBadKey},
	{name: "key checked before token", cmd: "r", key: "", arg: "", err: ErrBadKey},
	{name: "key invalid UTF-8", cmd: "l", key: "k\xff\xfe", arg: "0 5", want: ok(vocab.OpLock, "k\xff\xfe").lease(5)},
	{name: "key NBSP", cmd: "l", key: "k\xc2\xa0x", arg: "0 5", want: ok(vocab.OpLock, "k\xc2\xa0x").lease(5)},
	{name: "key VT FF NUL", cmd: "l", key: "\v\f\x00", arg: "0", want: ok(vocab.OpLock, "\v\f\x00")},
	{name: "key ideographic space", cmd: "l", key: "\u3000", arg: "0", want: ok(vocab.OpLock, "\u3000")},
	{name: "key 256 bytes", cmd: "l", key: strings.Repeat("x", 256), arg: "0", want: ok(vocab.OpLock, strings.Repeat("x", 256))},
	{name: "key punctuation", cmd: "l", key: "a/b:c*>_", arg: "0", want: ok(vocab.OpLock, "a/b:c*>_")},
	{name: "key on sem op", cmd: "sl", key: "s\tx", arg: "0 2", err: ErrBadKey},
	{name: "key on w", cmd: "w", key: "", arg: "5", err: ErrBadKey},

	// r / sr <token>: the whole line, trimmed
	{name: "r token", cmd: "r", key: "k", arg: "0123456789abcdef0123456789abcdef", want: ok(vocab.OpRelease, "k").tok("0123456789abcdef0123456789abcdef")},
	{name: "r trimmed", cmd: "r", key: "k", arg: " \ttok\t ", want: ok(vocab.OpRelease, "k").tok("tok")},
	{name: "r NBSP trimmed", cmd: "r", key: "k", arg: "\xc2\xa0tok\u3000", want: ok(vocab.OpRelease, "k").tok("tok")},
	{name: "r inner space kept", cmd: "r", key: "k", arg: "tok x", want: ok(vocab.OpRelease, "k").tok("tok x")},
	{name: "r inner NBSP kept", cmd: "r", key: "k", arg: "a\xc2\xa0b", want: ok(vocab.OpRelease, "k").tok("a\xc2\xa0b")},
	{name: "r invalid UTF-8 kept", cmd: "r", key: "k", arg: "\xff", want: ok(vocab.OpRelease, "k").tok("\xff")},
	{name: "r lone 0xa0 not trimmed", cmd: "r", key: "k", arg: "tok\xa0", want: ok(vocab.OpRelease, "k").tok("tok\xa0")},
	{name: "r numbers are tokens", cmd: "r", key: "k", arg: "1 2 3", want: ok(vocab.OpRelease, "k").tok("1 2 3")},
	{name: "r empty", cmd: "r", key: "k", arg: "", err: ErrEmptyToken},
	{name: "r blanks", cmd: "r", key: "k", arg: "  ", err: ErrEmptyToken},
	{name: "r NBSP only", cmd: "r", key: "k", arg: "\xc2\xa0", err: ErrEmptyToken},
	{name: "sr token", cmd: "sr", key: "s", arg: "\ttok ", want: ok(vocab.OpSemRelease, "s").tok("tok")},
	{name: "sr TAB only", cmd: "sr", key: "s", arg: "\t", err: ErrEmptyToken},
	{name: "sr bad key", cmd: "sr", key: "s s", arg: "tok", err: ErrBadKey},

	// n / sn <token> [<lease>]
	{name: "n token", cmd: "n", key: "k", arg: "tok", want: ok(vocab.OpRenew, "k").tok("tok")},
	{name: "n token lease", cmd: "n", key: "k", arg: "tok 7", want: ok(vocab.OpRenew, "k").tok("tok").lease(7)},
	{name: "n blanks", cmd: "n", key: "k", arg: "\ttok  9", want: ok(vocab.OpRenew, "k").tok("tok").lease(9)},
	{name: "n plus lease", cmd: "n", key: "k", arg: "tok +7", want: ok(vocab.OpRenew, "k").tok("tok").lease(7)},
	{name: "n NBSP separated", cmd: "n", key: "k", arg: "tok\xc2\xa07", want: ok(vocab.OpRenew, "k").tok("tok").lease(7)},
	{name: "n token is a field", cmd: "n", key: "k", arg: "\xc2\xa0tok\xc2\xa0", want: ok(vocab.OpRenew, "k").tok("tok")},
	{name: "n lease zero", cmd: "n", key: "k", arg: "tok 0", err: ErrBadLease},
	{name: "n lease negative", cmd: "n", key: "k", arg: "tok -1", err: ErrBadLease},
	{name: "n lease bad", cmd: "n", key: "k", arg: "tok x", err: ErrBadInteger},
	{name: "n lease overflow", cmd: "n", key: "k", arg: "tok 9223372037", err: ErrBadInteger},
	{name: "n lease max", cmd: "n", key: "k", arg: "tok 9223372036", want: ok(vocab.OpRenew, "k").tok("tok").lease(vocab.MaxSeconds)},
	{name: "n empty", cmd: "n", key: "k", arg: "", err: ErrArgCount},
	{name: "n blank", cmd: "n", key: "k", arg: " ", err: ErrArgCount},
	{name: "n three fields", cmd: "n", key: "k", arg: "tok 1 2", err: ErrArgCount},
	{name: "sn token lease", cmd: "sn", key: "s", arg: "tok 30", want: ok(vocab.OpSemRenew, "s").tok("tok").lease(30)},
	{name: "sn token", cmd: "sn", key: "s", arg: "tok", want: ok(vocab.OpSemRenew, "s").tok("tok")},
	{name: "sn lease zero", cmd: "sn", key: "s", arg: "tok 0", err: ErrBadLease},
	{name: "sn empty", cmd: "sn", key: "s", arg: "", err: ErrArgCount},

	// e [<lease>]
	{name: "e no lease", cmd: "e", key: "k", arg: "", want: ok(vocab.OpEnqueue, "k")},
	{name: "e blank", cmd: "e", key: "k", arg: " \t", want: ok(vocab.OpEnqueue, "k")},
	{name: "e lease", cmd: "e", key: "k", arg: "30", want: ok(vocab.OpEnqueue, "k").lease(30)},
	{name: "e plus lease", cmd: "e", key: "k", arg: " +30 ", want: ok(vocab.OpEnqueue, "k").lease(30)},
	{name: "e lease zero", cmd: "e", key: "k", arg: "0", err: ErrBadLease},
	{name: "e lease negative", cmd: "e", key: "k", arg: "-5", err: ErrBadLease},
	{name: "e lease bad", cmd: "e", key: "k", arg: "x", err: ErrBadInteger},
	{name: "e lease overflow", cmd: "e", key: "k", arg: "9223372037", err: ErrBadInteger},
	{name: "e two fields", cmd: "e", key: "k", arg: "30 junk", err: ErrArgCount},
	{name: "e two numbers", cmd: "e", key: "k", arg: "1 2", err: ErrArgCount},

	// w / sw <timeout>
	{name: "w timeout", cmd: "w", key: "k", arg: "5", want: ok(vocab.OpWait, "k").tmo(5)},
	{name: "w zero", cmd: "w", key: "k", arg: "0", want: ok(vocab.OpWait, "k")},
	{name: "w empty", cmd: "w", key: "k", arg: "", err: ErrArgCount},
	{name: "w two fields", cmd: "w", key: "k", arg: "1 2", err: ErrArgCount},
	{name: "w negative", cmd: "w", key: "k", arg: "-1", err: ErrNegativeTime},
	{name: "w bad", cmd: "w", key: "k", arg: "x", err: ErrBadInteger},
	{name: "w overflow", cmd: "w", key: "k", arg: "9223372037", err: ErrBadInteger},
	{name: "sw timeout", cmd: "sw", key: "s", arg: "\xc2\xa05\xc2\xa0", want: ok(vocab.OpSemWait, "s").tmo(5)},
	{name: "sw empty", cmd: "sw", key: "s", arg: "", err: ErrArgCount},
	{name: "sw negative", cmd: "sw", key: "s", arg: "-1", err: ErrNegativeTime},

	// sl <timeout> <limit> [<lease>]
	{name: "sl timeout limit", cmd: "sl", key: "s", arg: "0 2", want: ok(vocab.OpSemLock, "s").limit(2)},
	{name: "sl all", cmd: "sl", key: "s", arg: "10 3 30", want: ok(vocab.OpSemLock, "s").tmo(10).limit(3).lease(30)},
	{name: "sl max limit", cmd: "sl", key: "s", arg: "0 1048576", want: ok(vocab.OpSemLock, "s").limit(vocab.MaxLimit)},
	{name: "sl plus limit", cmd: "sl", key: "s", arg: "+0 +1", want: ok(vocab.OpSemLock, "s").limit(1)},
	{name: "sl limit over max", cmd: "sl", key: "s", arg: "0 1048577", err: ErrBadLimit},
	{name: "sl limit zero", cmd: "sl", key: "s", arg: "0 0", err: ErrBadLimit},
	{name: "sl limit negative", cmd: "sl", key: "s", arg: "0 -2", err: ErrBadLimit},
	{name: "sl limit int64 max", cmd: "sl", key: "s", arg: "0 9223372036854775807", err: ErrBadLimit},
	{name: "sl limit overflow", cmd: "sl", key: "s", arg: "0 99999999999999999999", err: ErrBadInteger},
	{name: "sl limit word", cmd: "sl", key: "s", arg: "0 two", err: ErrBadInteger},
	{name: "sl negative timeout", cmd: "sl", key: "s", arg: "-1 2", err: ErrNegativeTime},
	{name: "sl timeout before limit", cmd: "sl", key: "s", arg: "x 0", err: ErrBadInteger},
	{name: "sl limit before lease", cmd: "sl", key: "s", arg: "0 0 0", err: ErrBadLimit},
	{name: "sl lease zero", cmd: "sl", key: "s", arg: "0 2 0", err: ErrBadLease},
	{name: "sl lease bad", cmd: "sl", key: "s", arg: "0 2 x", err: ErrBadInteger},
	{name: "sl one field", cmd: "sl", key: "s", arg: "0", err: ErrArgCount},
	{name: "sl empty", cmd: "sl", key: "s", arg: "", err: ErrArgCount},
	{name: "sl four fields", cmd: "sl", key: "s", arg: "1 2 3 4", err: ErrArgCount},
	{name: "sl five fields", cmd: "sl", key: "s", arg: "1 2 3 4 5", err: ErrArgCount},

	// se <limit> [<lease>]
	{name: "se limit", cmd: "se", key: "s", arg: "2", want: ok(vocab.OpSemEnqueue, "s").limit(2)},
	{name: "se limit lease", cmd: "se", key: "s", arg: "2 30", want: ok(vocab.OpSemEnqueue, "s").limit(2).lease(30)},
	{name: "se plus limit", cmd: "se", key: "s", arg: "+3", want: ok(vocab.OpSemEnqueue, "s").limit(3)},
	{name: "se limit zero", cmd: "se", key: "s", arg: "0", err: ErrBadLimit},
	{name: "se limit over max", cmd: "se", key: "s", arg: "1048577", err: ErrBadLimit},
	{name: "se limit negative", cmd: "se", key: "s", arg: "-1", err: ErrBadLimit},
	{name: "se lease zero", cmd: "se", key: "s", arg: "2 0", err: ErrBadLease},
	{name: "se empty", cmd: "se", key: "s", arg: "", err: ErrArgCount},
	{name: "se three fields", cmd: "se", key: "s", arg: "2 3 4", err: ErrArgCount},

	// auth, ping, stats, barrier: no key validation
	{name: "auth", cmd: "auth", key: "_", arg: "secret", want: keylessTok(vocab.OpAuth, "secret")},
	{name: "auth empty key", cmd: "auth", key: "", arg: "secret", want: keylessTok(vocab.OpAuth, "secret")},
	{name: "auth spaced key", cmd: "auth", key: "a b\t", arg: "secret", want: keylessTok(vocab.OpAuth, "secret")},
	{name: "auth trimmed", cmd: "auth", key: "_", arg: "\t s e \xc2\xa0", want: keylessTok(vocab.OpAuth, "s e")},
	{name: "auth empty token parses", cmd: "auth", key: "_", arg: "", want: keylessTok(vocab.OpAuth, "")},
	{name: "auth long token", cmd: "auth", key: "_", arg: strings.Repeat("s", MaxAuthLine), want: keylessTok(vocab.OpAuth, strings.Repeat("s", MaxAuthLine))},
	{name: "ping", cmd: "ping", key: "_", arg: "_", want: keyless(vocab.OpPing)},
	{name: "ping empty", cmd: "ping", key: "", arg: "", want: keyless(vocab.OpPing)},
	{name: "ping junk", cmd: "ping", key: "a b", arg: "1 2 3 x", want: keyless(vocab.OpPing)},
	{name: "stats", cmd: "stats", key: "", arg: "", want: keyless(vocab.OpStats)},
	{name: "stats spaced key", cmd: "stats", key: "a b", arg: "x", want: keyless(vocab.OpStats)},
	{name: "barrier", cmd: "barrier", key: "", arg: "-1", want: keyless(vocab.OpBarrier)},
	{name: "barrier spaced key", cmd: "barrier", key: "\t", arg: "_", want: keyless(vocab.OpBarrier)},

	// stable-ref: the key line is the ref; 1–64 printable ASCII after trimming
	{name: "stable-ref", cmd: "stable-ref", key: "ref-1", arg: "_", want: keylessTok(vocab.OpStableRef, "ref-1")},
	{name: "stable-ref trimmed", cmd: "stable-ref", key: " \tref\xc2\xa0", arg: "_", want: keylessTok(vocab.OpStableRef, "ref")},
	{name: "stable-ref inner space", cmd: "stable-ref", key: "a b", arg: "", want: keylessTok(vocab.OpStableRef, "a b")},
	{name: "stable-ref printable range", cmd: "stable-ref", key: "!~", arg: "x y", want: keylessTok(vocab.OpStableRef, "!~")},
	{name: "stable-ref 64", cmd: "stable-ref", key: strings.Repeat("r", 64), arg: "_", want: keylessTok(vocab.OpStableRef, strings.Repeat("r", 64))},
	{name: "stable-ref 64 padded", cmd: "stable-ref", key: "  " + strings.Repeat("r", 64) + "  ", arg: "_", want: keylessTok(vocab.OpStableRef, strings.Repeat("r", 64))},
	{name: "stable-ref 65", cmd: "stable-ref", key: strings.Repeat("r", 65), arg: "_", err: ErrArgCount},
	{name: "stable-ref empty", cmd: "stable-ref", key: "", arg: "_", err: ErrArgCount},
	{name: "stable-ref blank", cmd: "stable-ref", key: " \t ", arg: "_", err: ErrArgCount},
	{name: "stable-ref DEL", cmd: "stable-ref", key: "ref\x7f", arg: "_", err: ErrArgCount},
	{name: "stable-ref control", cmd: "stable-ref", key: "re\x01f", arg: "_", err: ErrArgCount},
	{name: "stable-ref inner TAB", cmd: "stable-ref", key: "a\tb", arg: "_", err: ErrArgCount},
	{name: "stable-ref non-ASCII", cmd: "stable-ref", key: "r\xc3\xa9f", arg: "_", err: ErrArgCount},
	{name: "stable-ref inner NBSP", cmd: "stable-ref", key: "a\xc2\xa0b", arg: "_", err: ErrArgCount},

	// unknown commands
	{name: "unknown word", cmd: "bogus", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown upper case", cmd: "L", key: "k", arg: "0 5", err: ErrUnknownCommand},
	{name: "unknown empty", cmd: "", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown trailing space", cmd: "l ", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown leading space", cmd: " l", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown inner CR", cmd: "l\r", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown PING", cmd: "PING", key: "_", arg: "_", err: ErrUnknownCommand},
	{name: "unknown stable_ref", cmd: "stable_ref", key: "r", arg: "_", err: ErrUnknownCommand},
	{name: "unknown before bad key", cmd: "x", key: "", arg: "", err: ErrUnknownCommand},
	{name: "unknown question mark", cmd: "?", key: "k", arg: "0", err: ErrUnknownCommand},
	{name: "unknown redis-style command", cmd: "incrby", key: "k", arg: "1", err: ErrUnknownCommand},
}

func TestParseGrammar(t *testing.T) { runGrammar(t, grammarTests) }

// runGrammar checks each row against Parse, the request invariants and the
// naive reference parser.
func runGrammar(t *testing.T, tests []grammarCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd, key, arg := []byte(tc.cmd), []byte(tc.key), []byte(tc.arg)
			r, err := Parse(Frame{Cmd: cmd, Key: key, Arg: arg})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Parse(%q, %q, %.40q) error = %v, want %v", tc.cmd, tc.key, tc.arg, err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatalf("Parse(%q, %q, %.40q) error = %v", tc.cmd, tc.key, tc.arg, err)
				}
				if !sameRequest(r, vocab.Request(tc.want)) {
					t.Fatalf("Parse(%q, %q, %.40q) =\n %.200s, want\n %.200s", tc.cmd, tc.key, tc.arg, requestString(r), requestString(vocab.Request(tc.want)))
				}
				if err := checkRequest(r); err != nil {
					t.Fatalf("invariant: %v", err)
				}
			}
			if want := refOps[tc.cmd]; r.Op != want {
				t.Errorf("Op = %v, want %v (Op is set even on error)", r.Op, want)
			}
			// The naive reference agrees on every row, too.
			rr, rerr := refParse(cmd, key, arg)
			if rerr != err || err == nil && !sameRequest(r, rr) {
				t.Errorf("refParse = %s, %v", requestString(rr), rerr)
			}
		})
	}
}

// TestParseAliases pins the zero-copy contract: Key and Token point into
// the frame, they are not copies.
func TestParseAliases(t *testing.T) {
	key, arg := []byte("key"), []byte("  tok ")
	r, err := Parse(Frame{Cmd: []byte("r"), Key: key, Arg: arg})
	if err != nil {
		t.Fatal(err)
	}
	if &r.Key[0] != &key[0] || &r.Token[0] != &arg[2] {
		t.Fatal("Key/Token do not alias the frame")
	}
	ref := []byte(" id ")
	r, err = Parse(Frame{Cmd: []byte("stable-ref"), Key: ref})
	if err != nil || &r.Token[0] != &ref[1] {
		t.Fatalf("stable-ref token does not alias the key line (err %v)", err)
	}
}

func TestParseErrorsAreDistinct(t *testing.T) {
	errs := []error{ErrUnknownCommand, ErrBadInteger, ErrBadKey, ErrNegativeTime, ErrEmptyToken,
		ErrArgCount, ErrBadLease, ErrBadLimit, ErrIncomplete, ErrLineTooLong}
	seen := map[string]bool{}
	for i, a := range errs {
		if !strings.HasPrefix(a.Error(), "parse: ") {
			t.Errorf("%q lacks the package prefix", a)
		}
		if seen[a.Error()] {
			t.Errorf("duplicate message %q", a)
		}
		seen[a.Error()] = true
		for j, b := range errs {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}

// TestParseFramingScenarios replays the parse-level half of the black-box
// scenarios in conformance/scenarios/framing.txt (v2 profile): raw bytes
// through Next and Parse. "error" with the connection kept is a Parse
// sentinel; "error + closed" is ErrLineTooLong from Next.
func TestParseFramingScenarios(t *testing.T) {
	const tok = "00000000000000010123456789abcdef"
	k256 := "@k" + strings.Repeat("x", 254)
	tests := []struct {
		scenario string
		raw      string
		want     want
		err      error
	}{
		{"frame.crlf", "l\r\n@a\r\n0 5\r\n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.crlf", "r\r\n@a\r\n" + tok + "\r\n", ok(vocab.OpRelease, "@a").tok(tok), nil},
		{"frame.trailing-cr-run", "l\r\r\n@a\r\r\n0 5\r\r\n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.interior-cr", "l\n@a\rb\n0 5\n", want{}, ErrBadKey},
		{"frame.key-256-bytes", "l\n" + k256 + "\n0 5\n", ok(vocab.OpLock, k256).lease(5), nil},
		{"frame.key-257-bytes", "l\n" + k256 + "x\n0 5\n", want{}, ErrLineTooLong},
		{"frame.arg-256-bytes", "l\n@a\n" + strings.Repeat(" ", 253) + "0 5\n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.cmd-line-too-long", strings.Repeat("l", 300) + "\n@a\n0\n", want{}, ErrLineTooLong},
		{"frame.cap-with-crlf (v2 lenient, §I.15)", "l\n@a\n" + strings.Repeat(" ", 253) + "0 5\r\n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.too-long-drains-to-lf", "l\n@a\n" + strings.Repeat("x", 300), want{}, ErrLineTooLong},
		{"frame.empty-key", "l\n\n0 5\n", want{}, ErrBadKey},
		{"frame.empty-key", "l\n  \n0 5\n", want{}, ErrBadKey},
		{"frame.key-whitespace", "l\n@a b\n0 5\n", want{}, ErrBadKey},
		{"frame.key-whitespace", "l\n@a\tb\n0 5\n", want{}, ErrBadKey},
		{"frame.key-whitespace", "l\n @a\n0 5\n", want{}, ErrBadKey},
		{"frame.key-opaque-bytes", "l\n@k\xff\xfe\n0 5\n", ok(vocab.OpLock, "@k\xff\xfe").lease(5), nil},
		{"frame.key-opaque-bytes", "l\n@k\xc2\xa0x\n0 5\n", ok(vocab.OpLock, "@k\xc2\xa0x").lease(5), nil},
		{"frame.key-opaque-bytes", "r\n@k\xff\xfe\n" + tok + "\n", ok(vocab.OpRelease, "@k\xff\xfe").tok(tok), nil},
		{"frame.unknown-command", "bogus\n@a\n0\n", want{}, ErrUnknownCommand},
		{"frame.unknown-command", "L\n@a\n0 5\n", want{}, ErrUnknownCommand},
		{"frame.unknown-command", "\n@a\n0\n", want{}, ErrUnknownCommand},
		{"frame.unknown-command", "\n\n\n", want{}, ErrUnknownCommand},
		{"frame.bad-integers", "l\n@a\nabc\n", want{}, ErrBadInteger},
		{"frame.bad-integers", "l\n@a\n1.5\n", want{}, ErrBadInteger},
		{"frame.bad-integers", "l\n@a\n0x10\n", want{}, ErrBadInteger},
		{"frame.bad-integers", "l\n@a\n0 5s\n", want{}, ErrBadInteger},
		{"frame.bad-integers", "l\n@a\n99999999999999999999\n", want{}, ErrBadInteger},
		{"frame.bad-integers", "sl\n@s\n0 two\n", want{}, ErrBadInteger},
		{"frame.plus-sign", "l\n@a\n+0 +5\n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.plus-sign", "n\n@a\n" + tok + " +7\n", ok(vocab.OpRenew, "@a").tok(tok).lease(7), nil},
		{"frame.negative-timeout", "l\n@a\n-1\n", want{}, ErrNegativeTime},
		{"frame.negative-timeout", "l\n@a\n-1 5\n", want{}, ErrNegativeTime},
		{"frame.negative-timeout", "w\n@a\n-1\n", want{}, ErrNegativeTime},
		{"frame.negative-timeout", "sl\n@s\n-1 2\n", want{}, ErrNegativeTime},
		{"frame.lease-not-positive", "l\n@a\n0 0\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "l\n@a\n0 -3\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "e\n@b\n0\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "sl\n@s\n0 2 0\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "se\n@t\n2 0\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "n\n@c\n" + tok + " 0\n", want{}, ErrBadLease},
		{"frame.lease-not-positive", "n\n@c\n" + tok + " 5\n", ok(vocab.OpRenew, "@c").tok(tok).lease(5), nil},
		{"frame.arg-count", "l\n@a\n\n", want{}, ErrArgCount},
		{"frame.arg-count", "l\n@a\n1 2 3\n", want{}, ErrArgCount},
		{"frame.arg-count", "sl\n@s\n0\n", want{}, ErrArgCount},
		{"frame.arg-count", "sl\n@s\n0 0\n", want{}, ErrBadLimit},
		{"frame.arg-count", "sl\n@s\n0 -2\n", want{}, ErrBadLimit},
		{"frame.arg-count", "se\n@s\n\n", want{}, ErrArgCount},
		{"frame.arg-count", "se\n@s\n0\n", want{}, ErrBadLimit},
		{"frame.arg-count", "n\n@a\n\n", want{}, ErrArgCount},
		{"frame.arg-count", "w\n@a\n\n", want{}, ErrArgCount},
		{"frame.arg-count", "w\n@a\n1 2\n", want{}, ErrArgCount},
		{"frame.arg-count", "e\n@a\n30 junk\n", want{}, ErrArgCount},
		{"frame.seconds-overflow (§I.2 O5)", "l\n@a\n9223372037 5\n", want{}, ErrBadInteger},
		{"frame.seconds-overflow (§I.2 O5)", "l\n@a\n0 9223372037\n", want{}, ErrBadInteger},
		{"frame.seconds-overflow (§I.2 O5)", "l\n@a\n9223372036 5\n", ok(vocab.OpLock, "@a").tmo(vocab.MaxSeconds).lease(5), nil},
		{"frame.empty-token", "r\n@a\n\n", want{}, ErrEmptyToken},
		{"frame.empty-token", "r\n@a\n  \n", want{}, ErrEmptyToken},
		{"frame.empty-token", "sr\n@a\n\t\n", want{}, ErrEmptyToken},
		{"frame.whitespace-args", "l\n@a\n  0\t 5 \n", ok(vocab.OpLock, "@a").lease(5), nil},
		{"frame.whitespace-args", "n\n@a\n\t" + tok + "  9\n", ok(vocab.OpRenew, "@a").tok(tok).lease(9), nil},
		{"frame.whitespace-args", "l\n@b\n0\xc2\xa07\n", ok(vocab.OpLock, "@b").lease(7), nil},
		{"frame.whitespace-args", "r\n@b\n\xc2\xa0" + tok + "\n", ok(vocab.OpRelease, "@b").tok(tok), nil},
		{"frame.token-trimmed", "r\n@a\n" + tok + " x\n", ok(vocab.OpRelease, "@a").tok(tok + " x"), nil},
		{"frame.token-trimmed", "r\n@a\n " + tok + "\t\n", ok(vocab.OpRelease, "@a").tok(tok), nil},
		{"frame.stats-skips-key-check", "stats\n\n\n", keyless(vocab.OpStats), nil},
		{"frame.stats-skips-key-check", "stats\na b\nx\n", keyless(vocab.OpStats), nil},
		{"frame.auth-not-configured", "auth\n_\nsecret\n", keylessTok(vocab.OpAuth, "secret"), nil},
		{"frame.ping", "ping\n_\n_\n", keyless(vocab.OpPing), nil},
		{"frame.ping", "ping\n\n\n", keyless(vocab.OpPing), nil},
	}
	for _, tc := range tests {
		f, n, err := Next([]byte(tc.raw))
		if errors.Is(tc.err, ErrLineTooLong) {
			if !errors.Is(err, ErrLineTooLong) {
				t.Errorf("%s %.40q: Next error %v, want ErrLineTooLong", tc.scenario, tc.raw, err)
			}
			continue
		}
		if err != nil || n != len(tc.raw) {
			t.Errorf("%s %.40q: Next = %d, %v", tc.scenario, tc.raw, n, err)
			continue
		}
		r, err := Parse(f)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s %.40q: Parse error %v, want %v", tc.scenario, tc.raw, err, tc.err)
			continue
		}
		if err == nil && !sameRequest(r, vocab.Request(tc.want)) {
			t.Errorf("%s %.40q: Parse = %s, want %s", tc.scenario, tc.raw, requestString(r), requestString(vocab.Request(tc.want)))
		}
	}
	// frame.split-writes: a frame written in pieces is reassembled.
	var buf []byte
	for i, piece := range []string{"l\n@", "a\n0", " 5\n"} {
		buf = append(buf, piece...)
		f, n, err := Next(buf)
		if i < 2 {
			if !errors.Is(err, ErrIncomplete) {
				t.Fatalf("frame.split-writes piece %d: %v, want ErrIncomplete", i, err)
			}
			continue
		}
		r, perr := Parse(f)
		if err != nil || n != len(buf) || perr != nil || !sameRequest(r, vocab.Request(ok(vocab.OpLock, "@a").lease(5))) {
			t.Fatalf("frame.split-writes: %d, %v, %s, %v", n, err, requestString(r), perr)
		}
	}
}
