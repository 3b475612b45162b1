package loadgen

import (
	"bytes"
	"errors"
)

// Kind says what a Reply holds.
type Kind uint8

// Reply kinds. KindLine is the dflockd protocol; the others are RESP types.
const (
	KindLine   Kind = iota // dflockd reply line, Str without its LF
	KindSimple             // RESP "+...": Str
	KindError              // RESP "-...": Str
	KindInt                // RESP ":n": Int
	KindBulk               // RESP "$n": Str (may be empty)
	KindNil                // RESP "$-1" or "*-1" (RESP2) or "_" (RESP3)
	KindArray              // RESP "*n": Int = element count, elements skipped
)

var kindNames = [...]string{
	KindLine:   "line",
	KindSimple: "simple string",
	KindError:  "error",
	KindInt:    "integer",
	KindBulk:   "bulk string",
	KindNil:    "nil",
	KindArray:  "array",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Reply is one parsed server reply. Str aliases the buffer it was parsed
// from and is valid only until that buffer is next written to.
type Reply struct {
	Kind Kind
	Str  []byte
	Int  int64
}

// Frame-level errors. A parser returning one of them has found bytes that no
// well-behaved server sends; the connection cannot be resynchronised.
var (
	ErrLineTooLong = errors.New("loadgen: reply line too long")
	ErrProtocol    = errors.New("loadgen: malformed RESP reply")
)

// maxReplyLine bounds one reply line. dflockd's longest workload reply is a
// grant (~45 bytes); stats replies are not used by any workload. RESP lines
// here are short statuses and lengths; bulk payloads are bounded separately.
const maxReplyLine = 4096

// maxBulk bounds a RESP bulk string; no workload reads values longer than a
// token, and a reply must fit a connection's read buffer.
const maxBulk = 16 << 10

// maxNesting bounds RESP array nesting so a hostile reply cannot recurse deeply.
const maxNesting = 8

// ParseLine parses one dflockd reply line from b. It returns the reply and
// the number of bytes consumed including the LF, or n == 0 when b holds no
// complete line yet.
func ParseLine(b []byte) (r Reply, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > maxReplyLine {
			return Reply{}, 0, ErrLineTooLong
		}
		return Reply{}, 0, nil
	}
	if i > maxReplyLine {
		return Reply{}, 0, ErrLineTooLong
	}
	return Reply{Kind: KindLine, Str: b[:i]}, i + 1, nil
}
