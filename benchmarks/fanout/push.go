package fanout

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// Phases, as carried in every payload so a subscriber files each push
// under the phase it was sent in.
const (
	phaseWarmup byte = 'w'
	phaseClean  byte = 'c'
	phaseSlow   byte = 's'
	phaseAfter  byte = 'a'
)

// padByte fills a payload up to its size; a push that arrives with other
// bytes there was mangled.
const padByte = 'x'

// appendPayload appends a signal payload of exactly size bytes: the
// sequence number, the phase, the publisher's clock (Unix ns) just before
// the write, then padding.
func appendPayload(dst []byte, seq int64, phase byte, sent int64, size int) []byte {
	start := len(dst)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, ' ', phase, ' ')
	dst = strconv.AppendInt(dst, sent, 10)
	dst = append(dst, ' ')
	for len(dst)-start < size {
		dst = append(dst, padByte)
	}
	return dst
}

// pushLen is the length of the push line ("sig <channel> <payload>\n")
// a signal with a size-byte payload produces.
func pushLen(channel string, size int) int { return len("sig ") + len(channel) + 1 + size + 1 }

// errPush is wrapped by every malformed-push error.
var errPush = errors.New("want \"sig <channel> <seq> <phase> <sent ns> <padding>\"")

// parsePush checks a push line (without its LF) for channel and payload
// size and returns what its payload carries.
func parsePush(line []byte, channel string, size int) (seq int64, phase byte, sent int64, err error) {
	rest, ok := bytes.CutPrefix(line, []byte("sig "))
	if !ok {
		return 0, 0, 0, errPush
	}
	rest, ok = bytes.CutPrefix(rest, []byte(channel))
	if !ok || len(rest) != 1+size || rest[0] != ' ' {
		return 0, 0, 0, errPush
	}
	rest = rest[1:]
	var field []byte
	field, rest, _ = bytes.Cut(rest, []byte{' '})
	if seq, ok = parseUint(field); !ok || len(rest) < 2 || rest[1] != ' ' {
		return 0, 0, 0, errPush
	}
	phase, rest = rest[0], rest[2:]
	field, rest, _ = bytes.Cut(rest, []byte{' '})
	if sent, ok = parseUint(field); !ok {
		return 0, 0, 0, errPush
	}
	for _, c := range rest {
		if c != padByte {
			return 0, 0, 0, errPush
		}
	}
	return seq, phase, sent, nil
}

// parseUint parses a non-negative decimal int64 (a Unix ns timestamp has
// 19 digits) without allocating.
func parseUint(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		d := int64(c - '0')
		if c < '0' || c > '9' || v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
