package parse

import (
	"unicode"
	"unicode/utf8"
)

// maxFields is the most whitespace-separated fields any v2 argument has
// (sl: timeout, limit, lease). One more is kept so "too many" is detectable.
const maxFields = 4

// fields splits arg on runs of Unicode white space like strings.Fields, which
// is what dflockd uses for numeric arguments (spec §A.3, §I.35: a NBSP is a
// separator). It fills out without allocating and returns how many fields it
// found, counting past len(out) so callers can reject extra fields.
func fields(arg []byte, out *[maxFields][]byte) int {
	n := 0
	i := 0
	for i < len(arg) {
		for i < len(arg) {
			w := spaceWidth(arg[i:])
			if w == 0 {
				break
			}
			i += w
		}
		if i >= len(arg) {
			break
		}
		start := i
		for i < len(arg) && spaceWidth(arg[i:]) == 0 {
			if arg[i] < utf8.RuneSelf {
				i++
			} else {
				_, w := utf8.DecodeRune(arg[i:])
				i += w
			}
		}
		if n < maxFields {
			out[n] = arg[start:i]
		}
		n++
	}
	return n
}

// spaceWidth returns the byte width of the white-space rune at the start of
// b, or 0 if b does not start with white space.
func spaceWidth(b []byte) int {
	c := b[0]
	if c < utf8.RuneSelf {
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			return 1
		}
		return 0
	}
	r, w := utf8.DecodeRune(b)
	if unicode.IsSpace(r) {
		return w
	}
	return 0
}

// trimSpace is bytes.TrimSpace without allocation concerns: tokens are the
// whole argument line with Unicode white space trimmed (spec §A.3).
func trimSpace(b []byte) []byte {
	for len(b) > 0 {
		w := spaceWidth(b)
		if w == 0 {
			break
		}
		b = b[w:]
	}
	for len(b) > 0 {
		r, w := utf8.DecodeLastRune(b)
		if !unicode.IsSpace(r) {
			break
		}
		b = b[:len(b)-w]
	}
	return b
}

// atoi parses a base-10 int64 with an optional sign, as strconv.ParseInt
// does (Go's Atoi is what dflockd uses: "+5" is 5, "0x10" and "1.5" fail).
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '+', '-':
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}
