package filelock

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Field names of the lock-file format.
const (
	keyPID       = "pid"
	keyTimestamp = "timestamp"
	keyTag       = "tag"
)

// ErrMalformed reports a lock file without a usable pid or timestamp line.
var ErrMalformed = errors.New("filelock: malformed lock file")

// ErrBadTag reports a tag that cannot be written as one line of UTF-8.
var ErrBadTag = errors.New("filelock: tag must be one line of UTF-8")

// Info is the content of a lock file.
type Info struct {
	PID          int    // holder's process id; 0 when the file had no valid pid
	Timestamp    int64  // Unix seconds at acquisition; meaningful only if HasTimestamp
	HasTimestamp bool   // whether a valid timestamp line was present
	Tag          string // optional description; "" when absent
}

// Parse reads lock-file content. It accepts LF and CRLF line ends, ignores
// empty lines, lines without '=' and unknown keys, and lets a later duplicate
// key win, exactly as the protocol's Python example does.
//
// When pid or timestamp is missing or not a valid integer, Parse still
// returns every field it could read, together with an error wrapping
// ErrMalformed. A pid must be positive.
func Parse(b []byte) (Info, error) {
	var info Info
	var badPID, badTS string // why the field is unusable; "" when fine
	badPID, badTS = "missing pid", "missing timestamp"
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		// TrimSpace also drops the CR of a CRLF line end; it matches
		// Python's str.strip() for the interop example.
		key, value, ok := strings.Cut(string(bytes.TrimSpace(line)), "=")
		if !ok {
			continue
		}
		switch key {
		case keyPID:
			n, err := strconv.Atoi(value)
			if err != nil || n <= 0 {
				info.PID, badPID = 0, fmt.Sprintf("bad pid %q", value)
				continue
			}
			info.PID, badPID = n, ""
		case keyTimestamp:
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				info.Timestamp, info.HasTimestamp = 0, false
				badTS = fmt.Sprintf("bad timestamp %q", value)
				continue
			}
			info.Timestamp, info.HasTimestamp, badTS = n, true, ""
		case keyTag:
			info.Tag = value
		}
	}
	switch {
	case badPID != "" && badTS != "":
		return info, fmt.Errorf("%w: %s, %s", ErrMalformed, badPID, badTS)
	case badPID != "":
		return info, fmt.Errorf("%w: %s", ErrMalformed, badPID)
	case badTS != "":
		return info, fmt.Errorf("%w: %s", ErrMalformed, badTS)
	}
	return info, nil
}

// AppendInfo appends the lock-file encoding of info to dst: pid and
// timestamp lines always, a tag line only when Tag is not empty. Lines end
// in LF. The caller must have checked the tag with ValidTag.
func AppendInfo(dst []byte, info Info) []byte {
	dst = append(dst, keyPID+"="...)
	dst = strconv.AppendInt(dst, int64(info.PID), 10)
	dst = append(dst, "\n"+keyTimestamp+"="...)
	dst = strconv.AppendInt(dst, info.Timestamp, 10)
	dst = append(dst, '\n')
	if info.Tag != "" {
		dst = append(dst, keyTag+"="...)
		dst = append(dst, info.Tag...)
		dst = append(dst, '\n')
	}
	return dst
}

// ValidTag reports whether tag can be written and read back unchanged by
// every reader of the format: valid UTF-8 (the file encoding), no line
// breaks or NUL (one field per line), and no leading or trailing white space
// (readers strip it, so it would not survive a round trip).
func ValidTag(tag string) error {
	if !utf8.ValidString(tag) || strings.ContainsAny(tag, "\r\n\x00") || strings.TrimSpace(tag) != tag {
		return fmt.Errorf("%w: %q", ErrBadTag, tag)
	}
	return nil
}
