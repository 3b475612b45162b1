package ceiling

import (
	"bytes"
	"errors"
)

// maxLine is dflockd's cap on one request line (payload plus LF); a longer
// line is a protocol error that closes the connection.
const maxLine = 257

// maxFrame bounds a buffered partial request: three maximal lines.
const maxFrame = 3 * maxLine

// errLineTooLong reports a request line over maxLine bytes.
var errLineTooLong = errors.New("ceiling: request line too long")

// nextFrame splits the first complete 3-line request off b. It returns the
// three lines without their LF (and without trailing CRs), aliasing b, and
// the bytes consumed; n == 0 means b holds no complete request yet.
func nextFrame(b []byte) (cmd, key, arg []byte, n int, err error) {
	var lines [3][]byte
	for i := range lines {
		j := bytes.IndexByte(b[n:], '\n')
		if j < 0 {
			if len(b)-n > maxLine {
				return nil, nil, nil, 0, errLineTooLong
			}
			return nil, nil, nil, 0, nil
		}
		if j+1 > maxLine {
			return nil, nil, nil, 0, errLineTooLong
		}
		lines[i] = bytes.TrimRight(b[n:n+j], "\r")
		n += j + 1
	}
	return lines[0], lines[1], lines[2], n, nil
}

// grantPrefix starts the fixed grant. The token is constant: the ceiling
// measures framing and I/O, not token minting.
const grantPrefix = "ok 0123456789abcdef0123456789abcdef "

// defaultLease is dflockd's default lease in seconds, as reply bytes.
var defaultLease = []byte("33")

// appendReply appends the fixed reply to one request.
func appendReply(dst, cmd, arg []byte) []byte {
	switch string(cmd) {
	case "l", "sl":
		dst = append(dst, grantPrefix...)
		dst = append(dst, lease(cmd, arg)...)
		return append(dst, '\n')
	case "r", "sr", "ping":
		return append(dst, "ok\n"...)
	}
	return append(dst, "error\n"...)
}

// lease returns the lease field of an l ("<timeout> [<lease>]") or sl
// ("<timeout> <limit> [<lease>]") argument, or the default when absent.
func lease(cmd, arg []byte) []byte {
	want := 2
	if len(cmd) == 2 {
		want = 3
	}
	var field []byte
	for i := 0; i < want; i++ {
		arg = bytes.TrimLeft(arg, " \t")
		if len(arg) == 0 {
			return defaultLease
		}
		end := bytes.IndexAny(arg, " \t")
		if end < 0 {
			end = len(arg)
		}
		field, arg = arg[:end], arg[end:]
	}
	return field
}
