package parse

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// rep is strings.Repeat for building lines of an exact length.
func rep(s string, n int) string { return strings.Repeat(s, n) }

func frameString(f Frame) string {
	return fmt.Sprintf("{Cmd:%q Key:%q Arg:%q}", f.Cmd, f.Key, f.Arg)
}

func frameEqual(a, b Frame) bool {
	return bytes.Equal(a.Cmd, b.Cmd) && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Arg, b.Arg)
}

func fr(cmd, key, arg string) Frame {
	return Frame{Cmd: []byte(cmd), Key: []byte(key), Arg: []byte(arg)}
}

// cloneFrame copies a frame out of the buffer it aliases.
func cloneFrame(f Frame) Frame {
	return Frame{Cmd: bytes.Clone(f.Cmd), Key: bytes.Clone(f.Key), Arg: bytes.Clone(f.Arg)}
}

func TestNextLineEndings(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Frame
		n    int
	}{
		{"LF", "l\nk\n0 5\n", fr("l", "k", "0 5"), 8},
		{"CRLF", "l\r\nk\r\n0 5\r\n", fr("l", "k", "0 5"), 11},
		{"CR runs", "l\r\r\nk\r\r\r\n0 5\r\r\n", fr("l", "k", "0 5"), 15},
		{"mixed endings", "l\nk\r\n0 5\r\r\n", fr("l", "k", "0 5"), 11},
		{"interior CR kept", "l\nk\rb\n0 5\n", fr("l", "k\rb", "0 5"), 10},
		{"leading CR kept", "\rl\n\rk\n\r0\n", fr("\rl", "\rk", "\r0"), 9},
		{"CR then blank kept", "l\nk\r \n0\n", fr("l", "k\r ", "0"), 8},
		{"empty lines", "\n\n\n", fr("", "", ""), 3},
		{"CR-only lines", "\r\n\r\r\n\r\n", fr("", "", ""), 7},
		{"blank lines kept", " \n\t\n \n", fr(" ", "\t", " "), 6},
		{"trailing bytes untouched", "l\nk\n0\nr\nk\n", fr("l", "k", "0"), 6},
		{"NUL and high bytes", "l\n\x00\xff\n\xc2\xa0\n", fr("l", "\x00\xff", "\xc2\xa0"), 8},
		{"auth key and arg", "auth\n_\nsecret\r\n", fr("auth", "_", "secret"), 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, n, err := Next([]byte(tc.in))
			if err != nil {
				t.Fatalf("Next(%q) error %v", tc.in, err)
			}
			if n != tc.n || !frameEqual(f, tc.want) {
				t.Fatalf("Next(%q) = %s, %d; want %s, %d", tc.in, frameString(f), n, frameString(tc.want), tc.n)
			}
		})
	}
}

func TestNextIncomplete(t *testing.T) {
	for _, in := range []string{
		"", "l", "l\r", "l\n", "l\nk", "l\nk\n", "l\nk\n0 5", "l\nk\n0 5\r", "l\nk\n0 5\r\r",
		"l\rk\r0\r",   // a lone CR never ends a line
		"auth\n_\n",   // auth arg not started
		"\n\n",        // two empty lines
		rep("x", 257), // cmd line: cap+1 bytes without LF may still end in CR LF
		"l\n" + rep("x", 257),
		"l\nk\n" + rep("x", 257),
		"auth\n_\n" + rep("x", MaxAuthLine+1),
	} {
		f, n, err := Next([]byte(in))
		if !errors.Is(err, ErrIncomplete) || n != 0 || !frameEqual(f, Frame{}) {
			t.Errorf("Next(%.40q…) = %s, %d, %v; want ErrIncomplete, 0", in, frameString(f), n, err)
		}
	}
}

func TestNextCaps(t *testing.T) {
	a256, a255, a257 := rep("a", 256), rep("a", 255), rep("a", 257)
	big := rep("s", MaxAuthLine)
	tests := []struct {
		name string
		in   string
		want Frame // ignored on error
		err  error
		n    int // consumed on success, line start on ErrLineTooLong
	}{
		{"cmd 256", a256 + "\nk\n0\n", fr(a256, "k", "0"), nil, 261},
		{"cmd 256+CR", a256 + "\r\nk\n0\n", fr(a256, "k", "0"), nil, 262},
		{"cmd 255+CR+CR", a255 + "\r\r\nk\n0\n", fr(a255, "k", "0"), nil, 262},
		{"cmd 257", a257 + "\nk\n0\n", Frame{}, ErrLineTooLong, 0},
		{"cmd 256+CR+CR", a256 + "\r\r\nk\n0\n", Frame{}, ErrLineTooLong, 0},
		{"cmd 254+4CR", rep("a", 254) + "\r\r\r\r\nk\n0\n", Frame{}, ErrLineTooLong, 0},
		{"cmd 300", rep("l", 300) + "\n@a\n0\n", Frame{}, ErrLineTooLong, 0},
		{"key 256", "l\n" + a256 + "\n0 5\n", fr("l", a256, "0 5"), nil, 263},
		{"key 256+CR", "l\n" + a256 + "\r\n0 5\n", fr("l", a256, "0 5"), nil, 264},
		{"key 257", "l\n" + a257 + "\n0 5\n", Frame{}, ErrLineTooLong, 2},
		{"key 257 after CRLF", "l\r\n" + a257 + "\n0 5\n", Frame{}, ErrLineTooLong, 3},
		{"arg 256", "l\nk\n" + a256 + "\n", fr("l", "k", a256), nil, 261},
		{"arg 256+CR", "l\nk\n" + a256 + "\r\n", fr("l", "k", a256), nil, 262},
		{"arg 257", "l\nk\n" + a257 + "\n", Frame{}, ErrLineTooLong, 4},
		{"arg 256+CR+CR", "l\nk\n" + a256 + "\r\r\n", Frame{}, ErrLineTooLong, 4},
		{"auth arg 257", "auth\n_\n" + a257 + "\n", fr("auth", "_", a257), nil, 265},
		{"auth arg 64KiB", "auth\n_\n" + big + "\n", fr("auth", "_", big), nil, 7 + MaxAuthLine + 1},
		{"auth arg 64KiB+CR", "auth\n_\n" + big + "\r\n", fr("auth", "_", big), nil, 7 + MaxAuthLine + 2},
		{"auth CRLF cmd", "auth\r\n_\r\n" + big + "\r\n", fr("auth", "_", big), nil, 9 + MaxAuthLine + 2},
		{"auth arg 64KiB+1", "auth\n_\n" + big + "s\n", Frame{}, ErrLineTooLong, 7},
		{"auth arg 64KiB+CR+CR", "auth\n_\n" + big + "\r\r\n", Frame{}, ErrLineTooLong, 7},
		{"auth key 257", "auth\n" + a257 + "\nx\n", Frame{}, ErrLineTooLong, 5},
		{"Auth is not auth", "Auth\n_\n" + a257 + "\n", Frame{}, ErrLineTooLong, 7},
		{"auth+space is not auth", "auth \n_\n" + a257 + "\n", Frame{}, ErrLineTooLong, 8},
		{"l arg 64KiB", "l\nk\n" + big + "\n", Frame{}, ErrLineTooLong, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, n, err := Next([]byte(tc.in))
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if n != tc.n {
				t.Fatalf("n = %d, want %d", n, tc.n)
			}
			if tc.err == nil && !frameEqual(f, tc.want) {
				t.Fatalf("frame = %.80s, want %.80s", frameString(f), frameString(tc.want))
			}
			if tc.err != nil && !frameEqual(f, Frame{}) {
				t.Fatalf("frame on error = %.80s, want zero", frameString(f))
			}
		})
	}
}

// v1.10 counts CR bytes towards the cap (spec §A.2, row G1): 256 payload
// bytes fit with a bare LF, not with CRLF.
func TestNextCountingCR(t *testing.T) {
	a256, a255 := rep("a", 256), rep("a", 255)
	tests := []struct {
		name string
		in   string
		err  error
		n    int
	}{
		{"cmd 256", a256 + "\nk\n0\n", nil, 261},
		{"cmd 255+CR", a255 + "\r\nk\n0\n", nil, 261},
		{"cmd 256+CR", a256 + "\r\nk\n0\n", ErrLineTooLong, 0},
		{"key 256+CR", "l\n" + a256 + "\r\n0 5\n", ErrLineTooLong, 2},
		{"arg 255+CR", "l\nk\n" + a255 + "\r\n", nil, 261},
		{"arg 256+CR", "l\nk\n" + a256 + "\r\n", ErrLineTooLong, 4},
		{"auth 64KiB+CR", "auth\n_\n" + rep("s", MaxAuthLine) + "\r\n", ErrLineTooLong, 7},
		{"cmd 257 no LF yet", rep("a", 257), ErrLineTooLong, 0},
	}
	for _, tc := range tests {
		_, n, err := NextCountingCR([]byte(tc.in))
		if !errors.Is(err, tc.err) || n != tc.n {
			t.Errorf("%s: n, err = %d, %v; want %d, %v", tc.name, n, err, tc.n, tc.err)
		}
	}
}

// TestNextTooLongBeforeLF checks that an over-long line is reported as soon
// as cap+2 bytes of it are buffered, without waiting for its LF, so a peer
// cannot make the connection buffer an unbounded line.
func TestNextTooLongBeforeLF(t *testing.T) {
	tests := []struct {
		prefix string // the complete lines before the long one
		cap    int
	}{
		{"", MaxLine},
		{"l\n", MaxLine},
		{"l\r\nkey\r\n", MaxLine},
		{"auth\n", MaxLine},
		{"auth\n_\n", MaxAuthLine},
		{"auth\r\r\n_\n", MaxAuthLine},
		{"stats\n_\n", MaxLine},
	}
	for _, tc := range tests {
		for _, fill := range []string{"x", "\r"} {
			body := rep(fill, tc.cap+1)
			in := []byte(tc.prefix + body)
			if _, n, err := Next(in); !errors.Is(err, ErrIncomplete) || n != 0 {
				t.Errorf("%q + %d×%q: got %d, %v; want ErrIncomplete", tc.prefix, tc.cap+1, fill, n, err)
			}
			for _, extra := range []string{"x", "\r", "xxxxxxxx"} {
				in := []byte(tc.prefix + body + extra)
				_, n, err := Next(in)
				if !errors.Is(err, ErrLineTooLong) || n != len(tc.prefix) {
					t.Errorf("%q + %d×%q + %q: got %d, %v; want ErrLineTooLong, %d",
						tc.prefix, tc.cap+1, fill, extra, n, err, len(tc.prefix))
				}
			}
		}
	}
}

// validFrames are complete, in-cap frames with their expected split.
var validFrames = []struct {
	in   string
	want Frame
}{
	{"l\nk\n0 5\n", fr("l", "k", "0 5")},
	{"l\r\nk\r\n0 5\r\n", fr("l", "k", "0 5")},
	{"l\r\r\nk\r\r\n0 5\r\r\n", fr("l", "k", "0 5")},
	{"r\nk\n0123456789abcdef0123456789abcdef\n", fr("r", "k", "0123456789abcdef0123456789abcdef")},
	{"sl\nsem\n10 3 30\n", fr("sl", "sem", "10 3 30")},
	{"e\nk\n\n", fr("e", "k", "")},
	{"\n\n\n", fr("", "", "")},
	{"ping\n_\n_\n", fr("ping", "_", "_")},
	{rep("c", 256) + "\r\n" + rep("k", 256) + "\r\n" + rep("a", 256) + "\r\n", fr(rep("c", 256), rep("k", 256), rep("a", 256))},
	{"auth\n_\n" + rep("s", 4000) + "\r\n", fr("auth", "_", rep("s", 4000))},
	{"auth\n_\n" + rep("s", MaxAuthLine) + "\r\n", fr("auth", "_", rep("s", MaxAuthLine))},
}

func TestNextValidFramesAndPrefixes(t *testing.T) {
	for _, tc := range validFrames {
		in := []byte(tc.in)
		f, n, err := Next(in)
		if err != nil || n != len(in) || !frameEqual(f, tc.want) {
			t.Errorf("Next(%.40q) = %.80s, %d, %v; want %.80s, %d", tc.in, frameString(f), n, err, frameString(tc.want), len(in))
			continue
		}
		// Every proper prefix is incomplete. Long frames are sampled near
		// line boundaries and at a stride to keep the test fast.
		for _, i := range prefixLengths(in, 2048) {
			if i == len(in) {
				continue
			}
			if _, n, err := Next(in[:i]); !errors.Is(err, ErrIncomplete) || n != 0 {
				t.Errorf("Next(%.40q[:%d]) = %d, %v; want ErrIncomplete", tc.in, i, n, err)
			}
		}
	}
}

// prefixLengths lists the prefix lengths worth checking for b: all of them
// when b has at most all bytes, otherwise those near each LF and a stride.
func prefixLengths(b []byte, all int) []int {
	if len(b) <= all {
		out := make([]int, len(b)+1)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for i := 0; i <= len(b); i += 97 {
		out = append(out, i)
	}
	for i, c := range b {
		if c == '\n' {
			for d := -3; d <= 3; d++ {
				if j := i + d; j >= 0 && j <= len(b) {
					out = append(out, j)
				}
			}
		}
	}
	return append(out, len(b)-1, len(b))
}

func TestNextBackToBack(t *testing.T) {
	var stream []byte
	for _, tc := range validFrames {
		stream = append(stream, tc.in...)
	}
	off := 0
	for i, tc := range validFrames {
		f, n, err := Next(stream[off:])
		if err != nil || !frameEqual(f, tc.want) || n != len(tc.in) {
			t.Fatalf("frame %d: got %.80s, %d, %v; want %.80s, %d", i, frameString(f), n, err, frameString(tc.want), len(tc.in))
		}
		off += n
	}
	if off != len(stream) {
		t.Fatalf("consumed %d of %d", off, len(stream))
	}
	if _, n, err := Next(stream[off:]); !errors.Is(err, ErrIncomplete) || n != 0 {
		t.Fatalf("after the last frame: %d, %v; want ErrIncomplete", n, err)
	}
}

// TestNextAliases pins the zero-copy contract: frame lines are sub-slices
// of the input buffer.
func TestNextAliases(t *testing.T) {
	in := []byte("l\r\nkey\n0 5\n")
	f, _, err := Next(in)
	if err != nil {
		t.Fatal(err)
	}
	if &f.Cmd[0] != &in[0] || &f.Key[0] != &in[3] || &f.Arg[0] != &in[7] {
		t.Fatal("frame lines do not alias the input buffer")
	}
}

func TestCompleteLines(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"l", 0},
		{"l\r", 0},
		{"l\n", 1},
		{"l\r\n", 1},
		{"l\nk", 1},
		{"l\nk\r", 1},
		{"l\nk\n", 2},
		{"l\nk\n0 5", 2},
		{"\n", 1},
		{"\n\n", 2},
		{"\r\n\r\n", 2},
		{"auth\n_\n" + rep("s", 1000), 2},
	} {
		if got := CompleteLines([]byte(tc.in)); got != tc.want {
			t.Errorf("CompleteLines(%.30q) = %d, want %d", tc.in, got, tc.want)
		}
	}
	// Along every proper prefix of a frame the count is the number of LFs.
	for _, tc := range validFrames {
		in := []byte(tc.in)
		for _, i := range prefixLengths(in, 2048) {
			if i == len(in) {
				continue
			}
			if got, want := CompleteLines(in[:i]), bytes.Count(in[:i], []byte{'\n'}); got != want {
				t.Errorf("CompleteLines(%.30q[:%d]) = %d, want %d", tc.in, i, got, want)
			}
		}
	}
}

// splitResult is what a reader loop sees for a whole stream.
type splitResult struct {
	frames []Frame
	ends   []int // absolute stream offset just past each frame
	err    error // terminal error other than ErrIncomplete
	errOff int   // absolute offset reported with err
	rest   int   // bytes left unconsumed at the end
}

// splitStream consumes stream the way the connection loop does: bytes
// arrive in chunks of the given sizes (the last chunk takes the rest), are
// appended to a buffer, and every complete frame is taken off its front.
func splitStream(stream []byte, chunks []int) splitResult {
	var res splitResult
	var buf []byte
	base, pos := 0, 0
	feed := func(chunk []byte) bool {
		buf = append(buf, chunk...)
		for {
			f, n, err := Next(buf)
			if errors.Is(err, ErrIncomplete) {
				return true
			}
			if err != nil {
				res.err, res.errOff = err, base+n
				return false
			}
			res.frames = append(res.frames, cloneFrame(f))
			base += n
			res.ends = append(res.ends, base)
			// Compact into a fresh array so stale aliases would show up.
			buf = append([]byte(nil), buf[n:]...)
		}
	}
	for _, c := range chunks {
		c = min(c, len(stream)-pos)
		if !feed(stream[pos : pos+c]) {
			return res
		}
		pos += c
	}
	if feed(stream[pos:]) {
		res.rest = len(buf)
	}
	return res
}

func sameSplit(a, b splitResult) error {
	if len(a.frames) != len(b.frames) {
		return fmt.Errorf("%d frames vs %d", len(a.frames), len(b.frames))
	}
	for i := range a.frames {
		if !frameEqual(a.frames[i], b.frames[i]) || a.ends[i] != b.ends[i] {
			return fmt.Errorf("frame %d: %.80s@%d vs %.80s@%d", i, frameString(a.frames[i]), a.ends[i], frameString(b.frames[i]), b.ends[i])
		}
	}
	if a.err != b.err || a.errOff != b.errOff || a.rest != b.rest {
		return fmt.Errorf("tail: %v@%d rest %d vs %v@%d rest %d", a.err, a.errOff, a.rest, b.err, b.errOff, b.rest)
	}
	return nil
}

// randomLine returns a line payload (without LF or trailing CR) of up to
// limit bytes and its raw encoding with a random line ending that stays in
// the cap.
func randomLine(rng *rand.Rand, payload string, limit int) string {
	var end string
	switch k := rng.IntN(8); {
	case k < 4:
		end = "\n"
	case k < 7 || len(payload) == limit:
		end = "\r\n"
	default:
		end = rep("\r", 1+rng.IntN(limit+1-len(payload))) + "\n"
	}
	return payload + end
}

// randomPayload picks a payload of a length that favours the edge cases.
func randomPayload(rng *rand.Rand, limit int) string {
	const alphabet = "abc012 \t\x00\xff\xc2\xa0-+\r"
	var n int
	switch rng.IntN(6) {
	case 0:
		n = limit
	case 1:
		n = limit - rng.IntN(3)
	case 2:
		n = 0
	default:
		n = rng.IntN(min(limit, 40) + 1)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	// A payload never ends in CR: trailing CRs belong to the line end.
	for len(b) > 0 && b[len(b)-1] == '\r' {
		b[len(b)-1] = 'z'
	}
	return string(b)
}

// randomStream builds frames valid at the framing level and their encoding.
func randomStream(rng *rand.Rand, frames int) ([]byte, []Frame) {
	cmds := []string{"l", "r", "n", "e", "w", "sl", "sr", "sn", "se", "sw", "auth", "ping", "stats", "barrier", "stable-ref", "bogus", "", "Auth"}
	var stream []byte
	var want []Frame
	for range frames {
		cmd := cmds[rng.IntN(len(cmds))]
		if rng.IntN(10) == 0 {
			cmd = randomPayload(rng, MaxLine)
		}
		key := randomPayload(rng, MaxLine)
		argCap := MaxLine
		if cmd == "auth" {
			argCap = MaxAuthLine
			if rng.IntN(3) > 0 {
				argCap = 2000 // keep most auth lines small so the test stays fast
			}
		}
		arg := randomPayload(rng, argCap)
		stream = append(stream, randomLine(rng, cmd, MaxLine)...)
		stream = append(stream, randomLine(rng, key, MaxLine)...)
		stream = append(stream, randomLine(rng, arg, argCap)...)
		want = append(want, fr(cmd, key, arg))
	}
	return stream, want
}

// TestNextStreamSplits is the differential framing test: feeding a stream
// byte at a time or in random chunks yields exactly the frames (and the
// terminal error) that parsing it whole does.
func TestNextStreamSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x5eed, 42))
	for round := range 20 {
		stream, want := randomStream(rng, 60)
		tails := []string{
			"",                           // clean end
			"l\nk",                       // partial frame left over
			"l\nk\n" + rep("x", 300),     // over-long arg, LF not yet sent
			rep("y", 257) + "\nk\n0\n",   // over-long command line
			"auth\n_\n" + rep("s", 1000), // long partial auth line
		}
		tail := tails[round%len(tails)]
		full := append(bytes.Clone(stream), tail...)

		whole := splitStream(full, nil)
		if len(whole.frames) != len(want) {
			t.Fatalf("round %d: whole stream gave %d frames, want %d (err %v)", round, len(whole.frames), len(want), whole.err)
		}
		for i := range want {
			if !frameEqual(whole.frames[i], want[i]) {
				t.Fatalf("round %d frame %d: %.80s, want %.80s", round, i, frameString(whole.frames[i]), frameString(want[i]))
			}
		}
		switch round % len(tails) {
		case 0:
			if whole.err != nil || whole.rest != 0 {
				t.Fatalf("round %d: clean end gave %v rest %d", round, whole.err, whole.rest)
			}
		case 1, 4:
			if whole.err != nil || whole.rest != len(tail) {
				t.Fatalf("round %d: partial tail gave %v rest %d", round, whole.err, whole.rest)
			}
		case 2:
			if whole.err != ErrLineTooLong || whole.errOff != len(stream)+4 {
				t.Fatalf("round %d: got %v@%d, want ErrLineTooLong@%d", round, whole.err, whole.errOff, len(stream)+4)
			}
		case 3:
			if whole.err != ErrLineTooLong || whole.errOff != len(stream) {
				t.Fatalf("round %d: got %v@%d, want ErrLineTooLong@%d", round, whole.err, whole.errOff, len(stream))
			}
		}

		ones := make([]int, len(full))
		for i := range ones {
			ones[i] = 1
		}
		if err := sameSplit(splitStream(full, ones), whole); err != nil {
			t.Fatalf("round %d, byte at a time: %v", round, err)
		}
		for range 10 {
			var chunks []int
			for left := len(full); left > 0; {
				c := 1 + rng.IntN(600)
				if rng.IntN(4) == 0 {
					c = 1 + rng.IntN(4)
				}
				chunks = append(chunks, c)
				left -= c
			}
			if err := sameSplit(splitStream(full, chunks), whole); err != nil {
				t.Fatalf("round %d, chunks %v: %v", round, chunks, err)
			}
		}
	}
}
