package parse

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/dflockd-ng/dflockd/vocab"
)

// FuzzNext checks the framing invariants on arbitrary input and compares
// Next with refNext, the byte-at-a-time reference reader. The checked-in
// corpus lives in testdata/fuzz/FuzzNext.
func FuzzNext(f *testing.F) {
	// Seeds stay small: the fuzzer minimises every new input, which is slow
	// for a 64 KiB auth line. The unit tests cover that cap.
	for _, tc := range validFrames {
		if len(tc.in) <= 4096 {
			f.Add([]byte(tc.in))
		}
	}
	f.Add([]byte("l\nk\n" + rep("x", MaxLine) + "\r\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The v1 framing (CRs counted) against its reference too.
		vf, vn, verr := NextCountingCR(data)
		if rf, rn, rerr := refNextSlack(data, 0); verr != rerr || vn != rn || !frameEqual(vf, rf) {
			t.Fatalf("NextCountingCR = %.80s, %d, %v\nref = %.80s, %d, %v", frameString(vf), vn, verr, frameString(rf), rn, rerr)
		}
		fr, n, err := Next(data)
		if n < 0 || n > len(data) {
			t.Fatalf("n = %d out of [0, %d]", n, len(data))
		}
		rf, rn, rerr := refNext(data)
		if err != rerr || n != rn || !frameEqual(fr, rf) {
			t.Fatalf("Next = %.80s, %d, %v\nref  = %.80s, %d, %v", frameString(fr), n, err, frameString(rf), rn, rerr)
		}
		switch {
		case err == nil:
			checkFrame(t, data, fr, n)
		case errors.Is(err, ErrIncomplete):
			if n != 0 {
				t.Fatalf("ErrIncomplete with n = %d", n)
			}
			if got, want := CompleteLines(data), bytes.Count(data, []byte{'\n'}); got != want {
				t.Fatalf("CompleteLines = %d on an incomplete frame with %d LFs", got, want)
			}
		case errors.Is(err, ErrLineTooLong):
			if n != 0 && data[n-1] != '\n' {
				t.Fatalf("ErrLineTooLong at %d, which is not a line start", n)
			}
			if n >= len(data) {
				t.Fatalf("ErrLineTooLong at %d with nothing buffered there", n)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		// Prefix consistency: a shorter buffer is either still incomplete or
		// already yields exactly the same answer. This is what makes the
		// connection loop independent of how reads split the stream. Only
		// short inputs check every prefix: the fuzzer minimises each new
		// input with O(len²) runs, so the target has to stay cheap.
		for _, k := range prefixLengths(data, 64) {
			pf, pn, perr := Next(data[:k])
			if errors.Is(perr, ErrIncomplete) {
				if err == nil && k >= n {
					t.Fatalf("prefix %d of a frame ending at %d is incomplete", k, n)
				}
				continue
			}
			if perr != err || pn != n || !frameEqual(pf, fr) {
				t.Fatalf("prefix %d: %.80s, %d, %v; whole: %.80s, %d, %v", k, frameString(pf), pn, perr, frameString(fr), n, err)
			}
		}
	})
}

// checkFrame asserts the invariants of a frame Next returned for data.
func checkFrame(t *testing.T, data []byte, f Frame, n int) {
	t.Helper()
	if n < 3 || data[n-1] != '\n' || bytes.Count(data[:n], []byte{'\n'}) != 3 {
		t.Fatalf("frame of %d bytes does not end at its third LF", n)
	}
	argCap := MaxLine
	if string(f.Cmd) == "auth" {
		argCap = MaxAuthLine
	}
	for i, l := range [][]byte{f.Cmd, f.Key, f.Arg} {
		if bytes.IndexByte(l, '\n') >= 0 {
			t.Fatalf("line %d contains LF: %.80q", i, l)
		}
		if len(l) > 0 && l[len(l)-1] == '\r' {
			t.Fatalf("line %d ends in CR: %.80q", i, l)
		}
		limit := MaxLine
		if i == 2 {
			limit = argCap
		}
		if len(l) > limit {
			t.Fatalf("line %d has %d bytes, cap %d", i, len(l), limit)
		}
	}
	enc := make([]byte, 0, len(f.Cmd)+len(f.Key)+len(f.Arg)+3)
	enc = append(append(append(append(append(append(enc, f.Cmd...), '\n'), f.Key...), '\n'), f.Arg...), '\n')
	f2, n2, err := Next(enc)
	if err != nil || n2 != len(enc) || !frameEqual(f, f2) {
		t.Fatalf("re-encoded %.80q: %.80s, %d, %v", enc, frameString(f2), n2, err)
	}
	if f3, n3, err := Next(data[:n]); err != nil || n3 != n || !frameEqual(f, f3) {
		t.Fatalf("frame alone: %.80s, %d, %v", frameString(f3), n3, err)
	}
}

// FuzzParse checks Parse against refParse, the grammar invariants of every
// accepted request, and that the canonical text of a request parses back to
// the same request. The checked-in corpus lives in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	for _, tests := range [][]grammarCase{grammarTests, rfGrammarTests} {
		for _, tc := range tests {
			f.Add([]byte(tc.cmd), []byte(tc.key), []byte(tc.arg))
		}
	}
	f.Fuzz(func(t *testing.T, cmd, key, arg []byte) {
		// The helpers agree with the standard library functions dflockd uses.
		if msg := checkFields(arg); msg != "" {
			t.Fatal(msg)
		}
		if got, want := trimSpace(arg), bytes.TrimSpace(arg); !bytes.Equal(got, want) {
			t.Fatalf("trimSpace(%q) = %q, want %q", arg, got, want)
		}
		v, okk := atoi(arg)
		pv, perr := strconv.ParseInt(string(arg), 10, 64)
		if okk != (perr == nil) || okk && v != pv {
			t.Fatalf("atoi(%q) = %d, %v; ParseInt = %d, %v", arg, v, okk, pv, perr)
		}

		r, err := Parse(Frame{Cmd: cmd, Key: key, Arg: arg})
		// ParseInto leaves nothing of what its destination held: the
		// request path parses every frame into the same command.
		used := vocab.Request{Op: vocab.OpKCAS, Key: []byte("k"), Token: []byte("t"), Timeout: 1, Lease: 2, Limit: 3,
			Value: []byte("v"), Old: []byte("o"), N: 4, M: 5, TTL: 6}
		if ierr := ParseInto(Frame{Cmd: cmd, Key: key, Arg: arg}, &used); ierr != err || !reflect.DeepEqual(used, r) {
			t.Fatalf("ParseInto(%q, %q, %.60q) over a used request = %.200s, %v; Parse = %.200s, %v",
				cmd, key, arg, requestString(used), ierr, requestString(r), err)
		}
		rr, rerr := refParse(cmd, key, arg)
		if err != rerr {
			t.Fatalf("Parse(%q, %q, %.60q) error %v, reference %v", cmd, key, arg, err, rerr)
		}
		if r.Op != vocab.Named(cmd) {
			t.Fatalf("Op = %v for command %q", r.Op, cmd)
		}
		if err != nil {
			return
		}
		if !sameRequest(r, rr) {
			t.Fatalf("Parse(%q, %q, %.60q) =\n %.200s\nreference\n %.200s", cmd, key, arg, requestString(r), requestString(rr))
		}
		if err := checkRequest(r); err != nil {
			t.Fatalf("Parse(%q, %q, %.60q) = %.200s: %v", cmd, key, arg, requestString(r), err)
		}

		// Canonical text parses back to the same request and is a fixed point.
		c, k, a := canonical(r)
		r2, err := Parse(Frame{Cmd: c, Key: k, Arg: a})
		if err != nil || !sameRequest(r, r2) {
			t.Fatalf("canonical (%q, %q, %.60q) of %.200s parsed as %.200s, %v", c, k, a, requestString(r), requestString(r2), err)
		}
		c2, k2, a2 := canonical(r2)
		if !bytes.Equal(c, c2) || !bytes.Equal(k, k2) || !bytes.Equal(a, a2) {
			t.Fatalf("canonical form not stable: (%q, %q, %q) then (%q, %q, %q)", c, k, a, c2, k2, a2)
		}

		// Through the wire: if the input could have come off the wire, so
		// can its canonical form, and Next+Parse restores the request.
		if !wireLegal(cmd, key, arg) {
			return
		}
		if !wireLegal(c, k, a) {
			t.Fatalf("canonical (%q, %q, %.60q) of a wire-legal frame is not wire-legal", c, k, a)
		}
		text := append(append(append(append(append(append([]byte{}, c...), '\n'), k...), '\n'), a...), '\n')
		fr, n, err := Next(text)
		if err != nil || n != len(text) {
			t.Fatalf("Next(%.80q) = %d, %v", text, n, err)
		}
		r3, err := Parse(fr)
		if err != nil || !sameRequest(r, r3) {
			t.Fatalf("wire round trip of %.200s gave %.200s, %v", requestString(r), requestString(r3), err)
		}
	})
}

// wireLegal reports whether Next can produce a frame with these lines.
func wireLegal(cmd, key, arg []byte) bool {
	argCap := MaxLine
	if string(cmd) == "auth" {
		argCap = MaxAuthLine
	}
	for i, l := range [][]byte{cmd, key, arg} {
		limit := MaxLine
		if i == 2 {
			limit = argCap
		}
		if len(l) > limit || bytes.IndexByte(l, '\n') >= 0 || len(l) > 0 && l[len(l)-1] == '\r' {
			return false
		}
	}
	return true
}
