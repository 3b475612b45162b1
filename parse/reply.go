package parse

import (
	"strconv"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Every reply line starts with its status's wire word, taken from the one
// status table (vocab.Status.String); nothing here types a word twice.

// AppendStatus appends a bare status line, e.g. "timeout\n".
func AppendStatus(dst []byte, s vocab.Status) []byte {
	dst = append(dst, s.String()...)
	return append(dst, '\n')
}

// appendWord appends "<status> ", the start of a line with fields.
func appendWord(dst []byte, s vocab.Status) []byte {
	dst = append(dst, s.String()...)
	return append(dst, ' ')
}

// AppendGrant appends "<status> <token> <lease>\n" where token is the
// 32-hex token text; withFence adds the rf profile's decimal fence field.
func AppendGrant(dst []byte, s vocab.Status, token []byte, lease int64, fence uint64, withFence bool) []byte {
	dst = appendWord(dst, s)
	dst = append(dst, token...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, lease, 10)
	if withFence {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, fence, 10)
	}
	return append(dst, '\n')
}

// AppendRenew appends "ok <remaining>\n" (rf: "ok <remaining> <fence>\n").
func AppendRenew(dst []byte, remaining int64, fence uint64, withFence bool) []byte {
	dst = appendWord(dst, vocab.StatusOK)
	dst = strconv.AppendInt(dst, remaining, 10)
	if withFence {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, fence, 10)
	}
	return append(dst, '\n')
}

// AppendOKInt appends "ok <n>\n" (counters, list lengths, receiver counts).
func AppendOKInt(dst []byte, n int64) []byte {
	dst = appendWord(dst, vocab.StatusOK)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\n')
}

// AppendOKText appends "ok <text>\n" for replies that carry a payload: a
// KV value, a JSON document. text must not contain LF.
func AppendOKText[T ~string | ~[]byte](dst []byte, text T) []byte {
	dst = appendWord(dst, vocab.StatusOK)
	dst = append(dst, text...)
	return append(dst, '\n')
}

// AppendNotLeader appends a cluster member's refusal (spec §G):
// "error_not_leader <addr>\n" naming the leader's client address, or the
// bare status when no leader is known.
func AppendNotLeader(dst []byte, addr string) []byte {
	if addr == "" {
		return AppendStatus(dst, vocab.StatusErrorNotLeader)
	}
	dst = appendWord(dst, vocab.StatusErrorNotLeader)
	dst = append(dst, addr...)
	return append(dst, '\n')
}
