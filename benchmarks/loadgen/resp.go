package loadgen

import (
	"bytes"
	"strconv"
)

// ParseRESP parses one RESP2 reply (plus the RESP3 null "_") from b. It
// returns the reply and the bytes consumed, or n == 0 when b does not hold a
// complete reply yet. Array elements are validated and skipped; the reply
// carries only the element count.
func ParseRESP(b []byte) (r Reply, n int, err error) {
	return parseRESP(b, 0)
}

func parseRESP(b []byte, depth int) (r Reply, n int, err error) {
	line, n, err := respLine(b)
	if n == 0 || err != nil {
		return Reply{}, 0, err
	}
	if len(line) == 0 {
		return Reply{}, 0, ErrProtocol
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return Reply{Kind: KindSimple, Str: body}, n, nil
	case '-':
		return Reply{Kind: KindError, Str: body}, n, nil
	case ':':
		v, ok := parseInt(body)
		if !ok {
			return Reply{}, 0, ErrProtocol
		}
		return Reply{Kind: KindInt, Int: v}, n, nil
	case '_':
		if len(body) != 0 {
			return Reply{}, 0, ErrProtocol
		}
		return Reply{Kind: KindNil}, n, nil
	case '$':
		size, ok := parseInt(body)
		switch {
		case !ok || size < -1 || size > maxBulk:
			return Reply{}, 0, ErrProtocol
		case size == -1:
			return Reply{Kind: KindNil}, n, nil
		}
		end := n + int(size)
		if len(b) < end+2 {
			return Reply{}, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return Reply{}, 0, ErrProtocol
		}
		return Reply{Kind: KindBulk, Str: b[n:end]}, end + 2, nil
	case '*':
		count, ok := parseInt(body)
		switch {
		case !ok || count < -1:
			return Reply{}, 0, ErrProtocol
		case count == -1:
			return Reply{Kind: KindNil}, n, nil
		case depth >= maxNesting:
			return Reply{}, 0, ErrProtocol
		}
		for i := int64(0); i < count; i++ {
			_, m, err := parseRESP(b[n:], depth+1)
			if m == 0 || err != nil {
				return Reply{}, 0, err
			}
			n += m
		}
		return Reply{Kind: KindArray, Int: count}, n, nil
	}
	return Reply{}, 0, ErrProtocol
}

// respLine returns the first CRLF-terminated line of b without its CRLF and
// the bytes it spans, or n == 0 if it is not complete.
func respLine(b []byte) (line []byte, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > maxReplyLine {
			return nil, 0, ErrLineTooLong
		}
		return nil, 0, nil
	}
	if i == 0 || b[i-1] != '\r' {
		return nil, 0, ErrProtocol
	}
	return b[:i-1], i + 1, nil
}

// parseInt parses a base-10 integer with an optional leading '-', without
// allocating (strconv.ParseInt would need a string).
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

// AppendRESPArray appends the header of a RESP array of n elements.
func AppendRESPArray(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// AppendRESPBulk appends b as a RESP bulk string.
func AppendRESPBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendRESPBulkString appends s as a RESP bulk string.
func AppendRESPBulkString(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendRESPBulkInt appends v, in decimal, as a RESP bulk string.
func AppendRESPBulkInt(dst []byte, v int64) []byte {
	var num [20]byte
	return AppendRESPBulk(dst, strconv.AppendInt(num[:0], v, 10))
}
