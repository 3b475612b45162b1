package parse

import (
	"bytes"
	"errors"
)

// Line caps of the v2 protocol (spec §A.2, §I.14).
const (
	// MaxLine is the payload cap of every line except the auth argument;
	// dflockd has used 256 bytes since its first release.
	MaxLine = 256
	// MaxAuthLine lets the auth token be a long shared secret (v1.15+).
	MaxAuthLine = 64 << 10
)

var (
	// ErrIncomplete means the buffer ends inside a frame; read more bytes.
	ErrIncomplete = errors.New("parse: incomplete frame")
	// ErrLineTooLong means a line exceeds its cap. The stream cannot be
	// resynchronised safely, so the caller drains to the next LF, answers
	// error and closes the connection (spec §A.5, code 12).
	ErrLineTooLong = errors.New("parse: line too long")
)

// Frame is one request as three raw lines with the LF and any trailing CRs
// removed. The slices alias the buffer given to Next.
type Frame struct {
	Cmd, Key, Arg []byte
}

// Next splits the first frame off b.
//
// On success it returns the frame and n, the number of bytes it used.
// ErrIncomplete means b holds no complete frame yet (n = 0). ErrLineTooLong
// means one of the lines is over its cap; n is then the offset at which that
// line starts, so the caller can drain from there to the next LF.
func Next(b []byte) (f Frame, n int, err error) { return next(b, 1) }

// NextCountingCR is Next with dflockd v1.10's cap (spec §A.2, row G1): CR
// bytes count towards a line's cap, so 256 payload bytes and a CR are one
// byte too many. The v1 profile frames with it.
func NextCountingCR(b []byte) (f Frame, n int, err error) { return next(b, 0) }

// next splits a frame whose lines may carry slack CR bytes beyond the cap.
func next(b []byte, slack int) (f Frame, n int, err error) {
	var ok bool
	if f.Cmd, n, ok, err = line(b, 0, MaxLine, slack); !ok {
		return Frame{}, n, err
	}
	if f.Key, n, ok, err = line(b, n, MaxLine, slack); !ok {
		return Frame{}, n, err
	}
	argCap := MaxLine
	if string(f.Cmd) == "auth" {
		argCap = MaxAuthLine
	}
	if f.Arg, n, ok, err = line(b, n, argCap, slack); !ok {
		return Frame{}, n, err
	}
	return f, n, nil
}

// line reads the line starting at b[off:]. It returns the payload (trailing
// CRs stripped) and the offset just past its LF. On failure, end is 0 for an
// incomplete line and off for a line that is too long.
//
// The cap counts payload bytes, and the line before its LF may be slack
// bytes longer if those are CRs: with slack 1, a payload of exactly cap
// bytes may be followed by one CR (spec §I.15: lenient to CRLF clients).
// A line longer than that is rejected as soon as cap+slack+1 bytes have
// arrived without an LF, which bounds what a connection can make us buffer.
func line(b []byte, off, limit, slack int) (payload []byte, end int, ok bool, err error) {
	rest := b[off:]
	window := rest
	if len(window) > limit+slack+1 {
		window = window[:limit+slack+1]
	}
	i := bytes.IndexByte(window, '\n')
	if i < 0 {
		if len(rest) >= limit+slack+1 {
			return nil, off, false, ErrLineTooLong
		}
		return nil, 0, false, ErrIncomplete
	}
	payload = rest[:i]
	for len(payload) > 0 && payload[len(payload)-1] == '\r' {
		payload = payload[:len(payload)-1]
	}
	if len(payload) > limit {
		return nil, off, false, ErrLineTooLong
	}
	return payload, off + i + 1, true, nil
}

// CompleteLines reports how many LF-terminated lines (0, 1 or 2) start a
// partial frame. The loop uses it to re-arm the per-line read deadline when
// a new line of an unfinished frame arrives (spec §A.4).
func CompleteLines(partial []byte) int {
	i := bytes.IndexByte(partial, '\n')
	if i < 0 {
		return 0
	}
	if bytes.IndexByte(partial[i+1:], '\n') < 0 {
		return 1
	}
	return 2
}
