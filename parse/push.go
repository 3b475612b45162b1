package parse

import (
	"unicode/utf8"

	"github.com/dflockd-ng/dflockd/vocab"
)

var pushWords = [vocab.NumPushKinds]string{vocab.PushSignal: "sig ", vocab.PushWatch: "watch ", vocab.PushLeader: "leader "}

// AppendPush appends the push line "<word> <a> <b>\n".
func AppendPush(dst []byte, k vocab.PushKind, a, b string) []byte {
	dst = append(dst, pushWords[k]...)
	dst = append(dst, a...)
	dst = append(dst, ' ')
	dst = append(dst, b...)
	return append(dst, '\n')
}

// PushLen is the length of the line AppendPush appends.
func PushLen(k vocab.PushKind, a, b string) int { return len(pushWords[k]) + len(a) + 1 + len(b) + 1 }

// AppendOKList appends "ok <JSON array of items>\n", the lrange reply. The
// JSON is byte for byte what Go's encoding/json makes of a []string, as
// dflockd sends it (spec §B.7): HTML-escaped, invalid UTF-8 as U+FFFD.
func AppendOKList(dst []byte, items []string) []byte {
	dst = append(appendWord(dst, vocab.StatusOK), '[')
	for i, s := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendJSONString(dst, s)
	}
	return append(dst, ']', '\n')
}

const hexLower = "0123456789abcdef"

// AppendJSONString appends s as a JSON string the way encoding/json does
// with HTML escaping on: '"' and '\\' escaped, control characters as \n,
// \r, \t, \b, \f or \u00XX, '<', '>' and '&' as \u003c, \u003e, \u0026, U+2028
// and U+2029 as \u2028 and \u2029, and each byte of invalid UTF-8 as
// \ufffd.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexLower[c>>4], hexLower[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexLower[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
