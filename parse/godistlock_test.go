package parse

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestNextGodistlockValid(t *testing.T) {
	long := strings.Repeat("k", MaxLine)
	tests := []struct {
		in   string
		want GodistlockRequest
	}{
		{"HELLO 1.0 n1\n", GodistlockRequest{Op: GodistlockHello, Version: []byte("1.0"), Nonce: []byte("n1")}},
		{"ON foo 5000 a\n", GodistlockRequest{Op: GodistlockOn, Lock: []byte("foo"), LeaseMs: 5000, Nonce: []byte("a")}},
		{"ON foo 0 a\n", GodistlockRequest{Op: GodistlockOn, Lock: []byte("foo"), Nonce: []byte("a")}},
		{"ON foo +7 a\n", GodistlockRequest{Op: GodistlockOn, Lock: []byte("foo"), LeaseMs: 7, Nonce: []byte("a")}},
		{"TRY foo 10 b\r\n", GodistlockRequest{Op: GodistlockTry, Lock: []byte("foo"), LeaseMs: 10, Nonce: []byte("b")}},
		{"REFRESH foo 42 1000 c\n", GodistlockRequest{Op: GodistlockRefresh, Lock: []byte("foo"), Fence: 42, LeaseMs: 1000, Nonce: []byte("c")}},
		{"REFRESH foo 18446744073709551615 1 c\n", GodistlockRequest{Op: GodistlockRefresh, Lock: []byte("foo"), Fence: 1<<64 - 1, LeaseMs: 1, Nonce: []byte("c")}},
		{"OFF foo d\n", GodistlockRequest{Op: GodistlockOff, Lock: []byte("foo"), Nonce: []byte("d")}},
		{"IS foo e\r\r\n", GodistlockRequest{Op: GodistlockIs, Lock: []byte("foo"), Nonce: []byte("e")}},
		{"STATS f\n", GodistlockRequest{Op: GodistlockStats, Nonce: []byte("f")}},
		{"IS " + long + " g\n", GodistlockRequest{Op: GodistlockIs, Lock: []byte(long), Nonce: []byte("g")}},
		{"IS k\xc2\xa0\xff g\n", GodistlockRequest{Op: GodistlockIs, Lock: []byte("k\xc2\xa0\xff"), Nonce: []byte("g")}},
		{"ON foo 9223372036000 a\n", GodistlockRequest{Op: GodistlockOn, Lock: []byte("foo"), LeaseMs: MaxGodistlockLeaseMs, Nonce: []byte("a")}},
	}
	for _, tt := range tests {
		got, n, err := NextGodistlock([]byte(tt.in + "NEXT"))
		if err != nil || n != len(tt.in) || !gdEqual(got, tt.want) {
			t.Errorf("NextGodistlock(%q) = %+v, %d, %v; want %+v, %d", tt.in, got, n, err, tt.want, len(tt.in))
		}
	}
}

func TestNextGodistlockMalformed(t *testing.T) {
	tests := []struct {
		in    string
		err   error
		nonce string // "" = not known
	}{
		{"\n", ErrGodistlockUnknown, ""},
		{"on foo 1 a\n", ErrGodistlockUnknown, ""},
		{"LOCK foo a\n", ErrGodistlockUnknown, ""},
		{"HELLO\n", ErrGodistlockArgs, ""},
		{"HELLO n1\n", ErrGodistlockArgs, ""},
		{"HELLO 1 n1 x\n", ErrGodistlockArgs, ""},
		{"ON foo 1\n", ErrGodistlockArgs, ""},
		{"ON foo  1 a\n", ErrGodistlockArgs, ""},
		{"ON foo 1 a \n", ErrGodistlockArgs, ""},
		{" ON foo 1 a\n", ErrGodistlockUnknown, ""},
		{"STATS \n", ErrGodistlockArgs, ""},
		{"STATS\n", ErrGodistlockArgs, ""},
		{"REFRESH foo 1 2 3 4\n", ErrGodistlockArgs, ""},
		{"ON foo\t1 1 a\n", ErrGodistlockLock, "a"},
		{"IS " + strings.Repeat("k", MaxLine+1) + " a\n", ErrGodistlockLock, "a"},
		{"ON foo -1 a\n", ErrGodistlockTimeout, "a"},
		{"ON foo 1.5 a\n", ErrGodistlockTimeout, "a"},
		{"TRY foo 0x10 a\n", ErrGodistlockTimeout, "a"},
		{"TRY foo 9223372036001 a\n", ErrGodistlockTimeout, "a"},
		{"REFRESH foo -1 1 a\n", ErrGodistlockFence, "a"},
		{"REFRESH foo 18446744073709551616 1 a\n", ErrGodistlockFence, "a"},
		{"REFRESH foo 1 x a\n", ErrGodistlockTimeout, "a"},
	}
	for _, tt := range tests {
		got, n, err := NextGodistlock([]byte(tt.in))
		if !errors.Is(err, tt.err) || n != len(tt.in) || string(got.Nonce) != tt.nonce {
			t.Errorf("NextGodistlock(%q) = nonce %q, %d, %v; want nonce %q, %d, %v", tt.in, got.Nonce, n, err, tt.nonce, len(tt.in), tt.err)
		}
	}
}

func TestNextGodistlockFraming(t *testing.T) {
	line := "ON " + strings.Repeat("x", MaxGodistlockLine-7) + " 1 a" // exactly the cap
	if len(line) != MaxGodistlockLine {
		t.Fatalf("test line is %d bytes", len(line))
	}
	for _, tt := range []struct {
		in  string
		err error
	}{
		{"", ErrIncomplete},
		{"ON foo 1 a", ErrIncomplete},
		{line, ErrIncomplete},
		{line + "\n", ErrGodistlockLock}, // fits the line cap, not the key cap
		{line + "x", ErrLineTooLong},
		{line + "x\n", ErrLineTooLong},
	} {
		_, n, err := NextGodistlock([]byte(tt.in))
		if !errors.Is(err, tt.err) {
			t.Errorf("NextGodistlock(%.20q… %d bytes) err = %v, want %v", tt.in, len(tt.in), err, tt.err)
		}
		if (errors.Is(err, ErrIncomplete) || errors.Is(err, ErrLineTooLong)) && n != 0 {
			t.Errorf("NextGodistlock(%d bytes) n = %d with %v", len(tt.in), n, err)
		}
	}
	// Byte by byte, a pipelined stream yields the same requests.
	stream := []byte("HELLO 1 h\nON a 1 x\nIS a y\nSTATS z\n")
	var got []string
	var buf []byte
	for _, c := range stream {
		buf = append(buf, c)
		r, n, err := NextGodistlock(buf)
		if errors.Is(err, ErrIncomplete) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(r.Nonce))
		buf = buf[n:]
	}
	if strings.Join(got, ",") != "h,x,y,z" {
		t.Errorf("byte-by-byte nonces = %v", got)
	}
}

func TestGodistlockReplies(t *testing.T) {
	n := []byte("n7")
	tests := []struct{ got, want string }{
		{string(AppendGodistlockHello(nil, n, "host", "dflockd-ng/1")), "HELLO n7 host dflockd-ng/1\n"},
		{string(AppendGodistlockGive(nil, n, 12)), "GIVE n7 12\n"},
		{string(AppendGodistlockLock(nil, n, 1<<64-1)), "LOCK n7 18446744073709551615\n"},
		{string(AppendGodistlockNo(nil, n)), "NO n7\n"},
		{string(AppendGodistlockStat(nil, n, "locks", 3)), "STATS n7 locks 3\n"},
		{string(AppendGodistlockStatsEnd(nil, n)), "STATSEND n7\n"},
		{string(AppendGodistlockErr(nil, n, ErrGodistlockTimeout)), "ERR n7 invalid_timeout\n"},
		{string(AppendGodistlockErr(nil, nil, ErrLineTooLong)), "ERR - line_too_long\n"},
		{string(AppendGodistlockErr(nil, nil, errors.New("x"))), "ERR - internal_error\n"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// FuzzGodistlock checks NextGodistlock on arbitrary input: no panic, n in
// range, the framing contract, prefix consistency, and that a parsed
// request encodes to a line that parses back to the same request. The
// checked-in corpus lives in testdata/fuzz/FuzzGodistlock.
func FuzzGodistlock(f *testing.F) {
	for _, s := range []string{
		"HELLO 1.0 n1\n", "ON foo 5000 a\n", "TRY foo 0 b\r\n", "REFRESH foo 42 1000 c\n",
		"OFF foo d\n", "IS foo e\nIS bar f\n", "STATS g\n", "ON foo  1 a\n", "ON foo -1 a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, n, err := NextGodistlock(data)
		if n < 0 || n > len(data) {
			t.Fatalf("n = %d out of [0, %d]", n, len(data))
		}
		var ge *GodistlockError
		switch {
		case errors.Is(err, ErrIncomplete), errors.Is(err, ErrLineTooLong):
			if n != 0 {
				t.Fatalf("%v with n = %d", err, n)
			}
			i := bytes.IndexByte(data, '\n')
			if errors.Is(err, ErrIncomplete) && (i >= 0 || len(data) > MaxGodistlockLine) {
				t.Fatalf("ErrIncomplete on %d bytes, LF at %d", len(data), i)
			}
			return
		case err == nil, errors.As(err, &ge):
			if n == 0 || data[n-1] != '\n' || bytes.IndexByte(data, '\n') != n-1 {
				t.Fatalf("n = %d is not just past the first LF", n)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		// Every shorter prefix of the line is incomplete.
		for _, k := range prefixLengths(data[:n-1], 64) {
			if _, _, perr := NextGodistlock(data[:k]); !errors.Is(perr, ErrIncomplete) {
				t.Fatalf("prefix %d: %v, want ErrIncomplete", k, perr)
			}
		}
		if err != nil {
			if r.Nonce != nil && bytes.IndexByte(r.Nonce, ' ') >= 0 {
				t.Fatalf("ERR nonce %q has a space", r.Nonce)
			}
			return
		}
		enc := AppendGodistlockRequest(nil, &r)
		back, bn, berr := NextGodistlock(enc)
		if berr != nil || bn != len(enc) || !gdEqual(back, r) {
			t.Fatalf("round trip of %q: %q → %+v, %d, %v", data[:n], enc, back, bn, berr)
		}
	})
}

func gdEqual(a, b GodistlockRequest) bool {
	return a.Op == b.Op && bytes.Equal(a.Lock, b.Lock) && bytes.Equal(a.Version, b.Version) &&
		bytes.Equal(a.Nonce, b.Nonce) && a.Fence == b.Fence && a.LeaseMs == b.LeaseMs
}
