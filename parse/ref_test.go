package parse

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// This file holds deliberately naive reference implementations of the wire
// format, written straight from the spec with the standard library (the
// functions dflockd itself uses: strings.Fields, strings.TrimSpace,
// strconv.ParseInt). Tests and fuzz targets compare the optimised code
// against them.

// refNext splits one frame the way a byte-at-a-time reader would: it reads
// each line until its LF, gives up once the line has more raw bytes than
// its cap plus one trailing CR, and strips trailing CRs at the LF.
func refNext(b []byte) (Frame, int, error) {
	var lines [3][]byte
	pos := 0
	for i := range lines {
		limit := MaxLine
		if i == 2 && string(lines[0]) == "auth" {
			limit = MaxAuthLine
		}
		start, raw := pos, 0
		for {
			if pos == len(b) {
				return Frame{}, 0, ErrIncomplete
			}
			c := b[pos]
			pos++
			if c == '\n' {
				break
			}
			raw++
			if raw > limit+1 {
				return Frame{}, start, ErrLineTooLong
			}
		}
		payload := strings.TrimRight(string(b[start:start+raw]), "\r")
		if len(payload) > limit {
			return Frame{}, start, ErrLineTooLong
		}
		lines[i] = b[start : start+len(payload)]
	}
	return Frame{Cmd: lines[0], Key: lines[1], Arg: lines[2]}, pos, nil
}

var refOps = map[string]Op{
	"l": OpLock, "r": OpRelease, "n": OpRenew, "e": OpEnqueue, "w": OpWait,
	"sl": OpSemLock, "sr": OpSemRelease, "sn": OpSemRenew, "se": OpSemEnqueue, "sw": OpSemWait,
	"auth": OpAuth, "ping": OpPing, "stats": OpStats, "barrier": OpBarrier, "stable-ref": OpStableRef,
}

// refArgs gives the field-count range of each numeric grammar.
var refArgs = map[Op][2]int{
	OpLock: {1, 2}, OpRenew: {1, 2}, OpSemRenew: {1, 2}, OpEnqueue: {0, 1},
	OpWait: {1, 1}, OpSemWait: {1, 1}, OpSemLock: {2, 3}, OpSemEnqueue: {1, 2},
}

// refParse is Parse written from the spec (§A.3, §A.5, §B.1, §B.2, §B.13).
func refParse(cmd, key, arg []byte) (Request, error) {
	op, ok := refOps[string(cmd)]
	if !ok {
		return Request{}, ErrUnknownCommand
	}
	r := Request{Op: op}
	switch op {
	case OpPing, OpStats, OpBarrier:
		return r, nil
	case OpAuth:
		r.Token = []byte(strings.TrimSpace(string(arg)))
		return r, nil
	case OpStableRef:
		ref := strings.TrimSpace(string(key))
		if len(ref) < 1 || len(ref) > 64 {
			return r, ErrArgCount
		}
		for i := 0; i < len(ref); i++ {
			if ref[i] < 0x20 || ref[i] > 0x7e {
				return r, ErrArgCount
			}
		}
		r.Token = []byte(ref)
		return r, nil
	}
	if len(key) == 0 || bytes.ContainsAny(key, " \t\r\n") {
		return r, ErrBadKey
	}
	r.Key = key
	if op == OpRelease || op == OpSemRelease {
		tok := strings.TrimSpace(string(arg))
		if tok == "" {
			return r, ErrEmptyToken
		}
		r.Token = []byte(tok)
		return r, nil
	}
	fs := strings.Fields(string(arg))
	if span := refArgs[op]; len(fs) < span[0] || len(fs) > span[1] {
		return r, ErrArgCount
	}
	secs := func(s string) (int64, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v > 9223372036 {
			return 0, ErrBadInteger
		}
		return v, nil
	}
	timeout := func(s string) error {
		v, err := secs(s)
		if err == nil && v < 0 {
			err = ErrNegativeTime
		}
		r.Timeout = v
		return err
	}
	lease := func(i int) error {
		if i >= len(fs) {
			return nil
		}
		v, err := secs(fs[i])
		if err == nil && v < 1 {
			err = ErrBadLease
		}
		r.Lease = v
		return err
	}
	limit := func(s string) error {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return ErrBadInteger
		}
		if v < 1 || v > 1048576 {
			return ErrBadLimit
		}
		r.Limit = v
		return nil
	}
	var err error
	switch op {
	case OpLock:
		if err = timeout(fs[0]); err == nil {
			err = lease(1)
		}
	case OpRenew, OpSemRenew:
		r.Token = []byte(fs[0])
		err = lease(1)
	case OpEnqueue:
		err = lease(0)
	case OpWait, OpSemWait:
		err = timeout(fs[0])
	case OpSemLock:
		if err = timeout(fs[0]); err == nil {
			if err = limit(fs[1]); err == nil {
				err = lease(2)
			}
		}
	case OpSemEnqueue:
		if err = limit(fs[0]); err == nil {
			err = lease(1)
		}
	default:
		panic("refParse: no grammar for " + op.String())
	}
	return r, err
}

// sameRequest compares the semantic fields of two requests.
func sameRequest(a, b Request) bool {
	return a.Op == b.Op && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Token, b.Token) &&
		a.Timeout == b.Timeout && a.Lease == b.Lease && a.Limit == b.Limit
}

func requestString(r Request) string {
	return fmt.Sprintf("{%v Key:%q Token:%q Timeout:%d Lease:%d Limit:%d}", r.Op, r.Key, r.Token, r.Timeout, r.Lease, r.Limit)
}

// canonical renders a successfully parsed request as the shortest text
// that means the same thing: single spaces, plain decimals, "_" for unused
// lines, no optional lease when it is the default.
func canonical(r Request) (cmd, key, arg []byte) {
	num := strconv.AppendInt
	cmd = []byte(r.Op.String())
	key, arg = r.Key, []byte("_")
	optLease := func(b []byte) []byte {
		if r.Lease > 0 {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = num(b, r.Lease, 10)
		}
		return b
	}
	switch r.Op {
	case OpPing, OpStats, OpBarrier:
		key = []byte("_")
	case OpAuth:
		key, arg = []byte("_"), r.Token
	case OpStableRef:
		key = r.Token
	case OpRelease, OpSemRelease:
		arg = r.Token
	case OpRenew, OpSemRenew:
		arg = optLease(bytes.Clone(r.Token))
	case OpLock:
		arg = optLease(num(nil, r.Timeout, 10))
	case OpEnqueue:
		arg = optLease([]byte{})
	case OpWait, OpSemWait:
		arg = num(nil, r.Timeout, 10)
	case OpSemLock:
		arg = optLease(num(append(num(nil, r.Timeout, 10), ' '), r.Limit, 10))
	case OpSemEnqueue:
		arg = optLease(num(nil, r.Limit, 10))
	default:
		panic("canonical: " + r.Op.String())
	}
	return cmd, key, arg
}

// checkRequest asserts the invariants every successfully parsed request
// satisfies, whatever its text looked like.
func checkRequest(r Request) error {
	if r.Op == OpUnknown || int(r.Op) >= len(opNames) {
		return errors.New("op out of range")
	}
	if r.Timeout < 0 || r.Timeout > MaxSeconds {
		return fmt.Errorf("timeout %d out of [0, MaxSeconds]", r.Timeout)
	}
	if r.Lease < 0 || r.Lease > MaxSeconds {
		return fmt.Errorf("lease %d out of [0, MaxSeconds]", r.Lease)
	}
	switch r.Op {
	case OpSemLock, OpSemEnqueue:
		if r.Limit < 1 || r.Limit > MaxLimit {
			return fmt.Errorf("limit %d out of [1, MaxLimit]", r.Limit)
		}
	default:
		if r.Limit != 0 {
			return fmt.Errorf("limit %d set for %v", r.Limit, r.Op)
		}
	}
	switch r.Op {
	case OpAuth, OpPing, OpStats, OpBarrier, OpStableRef:
		if r.Key != nil {
			return fmt.Errorf("key %q set for key-less %v", r.Key, r.Op)
		}
	default:
		if len(r.Key) == 0 || bytes.ContainsAny(r.Key, " \t\r\n") {
			return fmt.Errorf("invalid key %q accepted", r.Key)
		}
	}
	switch r.Op {
	case OpRelease, OpSemRelease, OpRenew, OpSemRenew, OpStableRef:
		if len(r.Token) == 0 {
			return errors.New("empty token accepted")
		}
		if !bytes.Equal(r.Token, bytes.TrimSpace(r.Token)) {
			return fmt.Errorf("untrimmed token %q", r.Token)
		}
	case OpAuth:
		if !bytes.Equal(r.Token, bytes.TrimSpace(r.Token)) {
			return fmt.Errorf("untrimmed token %q", r.Token)
		}
	default:
		if r.Token != nil {
			return fmt.Errorf("token %q set for %v", r.Token, r.Op)
		}
	}
	if r.Op == OpStableRef && len(r.Token) > MaxStableRef {
		return fmt.Errorf("stable-ref of %d bytes", len(r.Token))
	}
	switch r.Op {
	case OpLock, OpWait, OpSemLock, OpSemWait:
	default:
		if r.Timeout != 0 {
			return fmt.Errorf("timeout set for %v", r.Op)
		}
	}
	switch r.Op {
	case OpLock, OpRenew, OpEnqueue, OpSemLock, OpSemRenew, OpSemEnqueue:
	default:
		if r.Lease != 0 {
			return fmt.Errorf("lease set for %v", r.Op)
		}
	}
	return nil
}
