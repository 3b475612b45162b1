package loadgen

import (
	"errors"
	"testing"
)

func TestParseRESP(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
		str  string
		i    int64
	}{
		{"+OK\r\n", KindSimple, "OK", 0},
		{"+\r\n", KindSimple, "", 0},
		{"-ERR wrong type\r\n", KindError, "ERR wrong type", 0},
		{":1\r\n", KindInt, "", 1},
		{":-42\r\n", KindInt, "", -42},
		{"$5\r\nhello\r\n", KindBulk, "hello", 0},
		{"$0\r\n\r\n", KindBulk, "", 0},
		{"$4\r\na\r\nb\r\n", KindBulk, "a\r\nb", 0}, // binary-safe
		{"$-1\r\n", KindNil, "", 0},
		{"*-1\r\n", KindNil, "", 0},
		{"_\r\n", KindNil, "", 0},
		{"*0\r\n", KindArray, "", 0},
		{"*3\r\n:1\r\n$2\r\nab\r\n*1\r\n+x\r\n", KindArray, "", 3},
	}
	for _, tc := range cases {
		// Complete: one reply, followed by junk that must not be consumed.
		buf := []byte(tc.in + "+next\r\n")
		r, n, err := ParseRESP(buf)
		if err != nil || n != len(tc.in) {
			t.Errorf("%q: n=%d err=%v, want n=%d", tc.in, n, err, len(tc.in))
			continue
		}
		if r.Kind != tc.kind || string(r.Str) != tc.str || r.Int != tc.i {
			t.Errorf("%q: got %v %q %d, want %v %q %d", tc.in, r.Kind, r.Str, r.Int, tc.kind, tc.str, tc.i)
		}
		// Every proper prefix is incomplete, never an error.
		for cut := 0; cut < len(tc.in); cut++ {
			if _, n, err := ParseRESP([]byte(tc.in[:cut])); n != 0 || err != nil {
				t.Errorf("%q cut at %d: n=%d err=%v, want incomplete", tc.in, cut, n, err)
			}
		}
	}
}

func TestParseRESPRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		"OK\r\n",         // no type byte
		"+OK\n",          // LF without CR
		"\r\n",           // empty line
		":12a\r\n",       // bad integer
		":\r\n",          // empty integer
		"$-2\r\n",        // bad length
		"$3\r\nabcd\r\n", // payload longer than announced
		"$99999999\r\n",  // larger than any reply a workload reads
		"*-5\r\n",        // bad count
		"*1\r\n?x\r\n",   // bad element
		"_x\r\n",         // RESP3 null with a body
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", // too deep
	} {
		if _, n, err := ParseRESP([]byte(in)); err == nil {
			t.Errorf("%q: accepted (n=%d)", in, n)
		}
	}
	long := make([]byte, maxReplyLine+10)
	long[0] = '+'
	if _, _, err := ParseRESP(long); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("unterminated long line: err=%v, want ErrLineTooLong", err)
	}
}

func TestParseLine(t *testing.T) {
	r, n, err := ParseLine([]byte("ok abc 30\nok\n"))
	if err != nil || n != 10 || string(r.Str) != "ok abc 30" || r.Kind != KindLine {
		t.Fatalf("got %q n=%d err=%v", r.Str, n, err)
	}
	if _, n, err := ParseLine([]byte("ok abc")); n != 0 || err != nil {
		t.Fatalf("partial line: n=%d err=%v", n, err)
	}
	long := make([]byte, maxReplyLine+1)
	if _, _, err := ParseLine(long); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("long line: err=%v", err)
	}
}

func TestAppendRESP(t *testing.T) {
	var b []byte
	b = AppendRESPArray(b, 3)
	b = AppendRESPBulkString(b, "SET")
	b = AppendRESPBulk(b, []byte("k"))
	b = AppendRESPBulkInt(b, -1200)
	if want := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\n-1200\r\n"; string(b) != want {
		t.Fatalf("got %q, want %q", b, want)
	}
}
