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
func refNext(b []byte) (Frame, int, error) { return refNextSlack(b, 1) }

// refNextSlack is refNext where a line before its LF may be slack CR bytes
// longer than its cap (0: CRs count, as NextCountingCR).
func refNextSlack(b []byte, slack int) (Frame, int, error) {
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
			if raw > limit+slack {
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
	// redis-feats primitives (§B.4–B.12)
	"rl": OpReadLock, "wl": OpWriteLock, "rr": OpReadRelease, "wr": OpWriteRelease,
	"rn": OpReadRenew, "wn": OpWriteRenew, "re": OpReadEnqueue, "we": OpWriteEnqueue,
	"rw": OpReadWait, "ww": OpWriteWait,
	"incr": OpIncr, "decr": OpDecr, "get": OpGet, "cset": OpCSet,
	"kset": OpKSet, "kget": OpKGet, "kdel": OpKDel, "kcas": OpKCAS,
	"lpush": OpLPush, "rpush": OpRPush, "lpop": OpLPop, "rpop": OpRPop, "llen": OpLLen,
	"lrange": OpLRange, "blpop": OpBLPop, "brpop": OpBRPop,
	"listen": OpListen, "unlisten": OpUnlisten, "signal": OpSignal, "watch": OpWatch, "unwatch": OpUnwatch,
	"bwait": OpBWait, "elect": OpElect, "resign": OpResign, "observe": OpObserve, "unobserve": OpUnobserve,
}

// refShape maps the rf commands whose argument grammar is borrowed from a
// lock command to that command (§B.4: rl/wl like l …; §B.7: blpop like w;
// §B.12: elect like l, resign like r).
var refShape = map[Op]Op{
	OpReadLock: OpLock, OpWriteLock: OpLock, OpElect: OpLock,
	OpReadRelease: OpRelease, OpWriteRelease: OpRelease, OpResign: OpRelease,
	OpReadRenew: OpRenew, OpWriteRenew: OpRenew,
	OpReadEnqueue: OpEnqueue, OpWriteEnqueue: OpEnqueue,
	OpReadWait: OpWait, OpWriteWait: OpWait, OpBLPop: OpWait, OpBRPop: OpWait,
}

// refArgs gives the field-count range of each numeric grammar.
var refArgs = map[Op][2]int{
	OpLock: {1, 2}, OpRenew: {1, 2}, OpSemRenew: {1, 2}, OpEnqueue: {0, 1},
	OpWait: {1, 1}, OpSemWait: {1, 1}, OpSemLock: {2, 3}, OpSemEnqueue: {1, 2},
}

// refParse is Parse written from the spec (§A.3, §A.5, §B.1, §B.2, §B.4–B.13).
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
	if done, err := refParseRF(&r, string(key), string(arg)); done {
		return r, err
	}
	shape := op
	if sh, ok := refShape[op]; ok {
		shape = sh
	}
	if shape == OpRelease || op == OpSemRelease {
		tok := strings.TrimSpace(string(arg))
		if tok == "" {
			return r, ErrEmptyToken
		}
		r.Token = []byte(tok)
		return r, nil
	}
	fs := strings.Fields(string(arg))
	if span := refArgs[shape]; len(fs) < span[0] || len(fs) > span[1] {
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
	switch shape {
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

// refParseRF parses the rf commands with a grammar of their own; done is
// false for those that borrow a lock command's grammar (refShape).
func refParseRF(r *Request, key, arg string) (done bool, err error) {
	const maxSecs = 9223372036
	integer := func(s string) (int64, error) {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, ErrBadInteger
		}
		return v, nil
	}
	// ttl: a KV time to live, non-negative whole seconds within Go's
	// duration range (§B.6, §I.2 O5); the text is raw, not trimmed.
	ttl := func(s string) error {
		v, err := integer(s)
		if err != nil || v < 0 || v > maxSecs {
			return ErrBadInteger
		}
		r.TTL = v
		return nil
	}
	switch r.Op {
	case OpIncr, OpDecr, OpCSet: // §B.5: one int64, trimmed
		r.N, err = integer(strings.TrimSpace(arg))
		return true, err
	case OpGet, OpKGet, OpKDel, OpLPop, OpRPop, OpLLen, OpWatch, OpUnwatch, OpObserve, OpUnobserve:
		return true, nil // the argument line is ignored
	case OpKSet: // §B.6: "<value>" or "<value>\t<ttl>"
		if arg == "" {
			return true, ErrArgCount
		}
		value, rest, found := strings.Cut(arg, "\t")
		if !found {
			r.Value = []byte(arg)
			return true, nil
		}
		if value == "" || strings.Contains(rest, "\t") {
			return true, ErrArgCount
		}
		r.Value = []byte(value)
		return true, ttl(rest)
	case OpKCAS: // §B.6: "<old>\t<new>\t<ttl>", exactly two TABs
		parts := strings.Split(arg, "\t")
		if len(parts) != 3 || parts[1] == "" {
			return true, ErrArgCount
		}
		r.Old, r.Value = []byte(parts[0]), []byte(parts[1])
		if parts[2] == "" {
			return true, nil
		}
		return true, ttl(parts[2])
	case OpLPush, OpRPush: // §B.7: raw, non-empty
		if arg == "" {
			return true, ErrArgCount
		}
		r.Value = []byte(arg)
		return true, nil
	case OpLRange: // §B.7: "<start> <stop>"
		fs := strings.Fields(arg)
		if len(fs) != 2 {
			return true, ErrArgCount
		}
		if r.N, err = integer(fs[0]); err != nil {
			return true, err
		}
		r.M, err = integer(fs[1])
		return true, err
	case OpListen, OpUnlisten: // §B.9: optional group, trimmed
		r.Value = []byte(strings.TrimSpace(arg))
		return true, nil
	case OpSignal: // §A.3, §B.9: literal channel, raw non-empty payload
		if strings.ContainsAny(key, "*>") {
			return true, ErrBadKey
		}
		if arg == "" {
			return true, ErrArgCount
		}
		r.Value = []byte(arg)
		return true, nil
	case OpBWait: // §B.11: "<count> <timeout>", count > 0 (code 13)
		fs := strings.Fields(arg)
		if len(fs) != 2 {
			return true, ErrArgCount
		}
		if r.N, err = integer(fs[0]); err != nil {
			return true, err
		}
		if r.N < 1 {
			return true, ErrBadLimit
		}
		t, err := integer(fs[1])
		if err != nil || t > maxSecs {
			return true, ErrBadInteger
		}
		if t < 0 {
			return true, ErrNegativeTime
		}
		r.Timeout = t
		return true, nil
	}
	return false, nil
}

// sameRequest compares the semantic fields of two requests.
func sameRequest(a, b Request) bool {
	return a.Op == b.Op && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Token, b.Token) &&
		a.Timeout == b.Timeout && a.Lease == b.Lease && a.Limit == b.Limit &&
		bytes.Equal(a.Value, b.Value) && bytes.Equal(a.Old, b.Old) &&
		a.N == b.N && a.M == b.M && a.TTL == b.TTL
}

func requestString(r Request) string {
	return fmt.Sprintf("{%v Key:%q Token:%q Timeout:%d Lease:%d Limit:%d Value:%q Old:%q N:%d M:%d TTL:%d}",
		r.Op, r.Key, r.Token, r.Timeout, r.Lease, r.Limit, r.Value, r.Old, r.N, r.M, r.TTL)
}

// canonical renders a successfully parsed request as the shortest text
// that means the same thing: single spaces, plain decimals, "_" for unused
// lines, no optional lease when it is the default, raw values verbatim.
// The one exception: kset always spells its TTL, so that a value ending in
// CR stays wire-legal (a trailing CR would be stripped by the reader).
func canonical(r Request) (cmd, key, arg []byte) {
	num := strconv.AppendInt
	cmd = []byte(r.Op.String())
	key, arg = r.Key, []byte("_")
	shape := r.Op
	if sh, ok := refShape[r.Op]; ok {
		shape = sh
	}
	optLease := func(b []byte) []byte {
		if r.Lease > 0 {
			if len(b) > 0 {
				b = append(b, ' ')
			}
			b = num(b, r.Lease, 10)
		}
		return b
	}
	switch shape {
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
	case OpIncr, OpDecr, OpCSet:
		arg = num(nil, r.N, 10)
	case OpGet, OpKGet, OpKDel, OpLPop, OpRPop, OpLLen, OpWatch, OpUnwatch, OpObserve, OpUnobserve:
	case OpKSet:
		arg = num(append(bytes.Clone(r.Value), '\t'), r.TTL, 10)
	case OpKCAS:
		arg = append(append(append(bytes.Clone(r.Old), '\t'), r.Value...), '\t')
		if r.TTL > 0 {
			arg = num(arg, r.TTL, 10)
		}
	case OpLPush, OpRPush, OpListen, OpUnlisten, OpSignal:
		arg = r.Value
	case OpLRange:
		arg = num(append(num(nil, r.N, 10), ' '), r.M, 10)
	case OpBWait:
		arg = num(append(num(nil, r.N, 10), ' '), r.Timeout, 10)
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
	shape := r.Op
	if sh, ok := refShape[r.Op]; ok {
		shape = sh
	}
	if r.Timeout < 0 || r.Timeout > MaxSeconds {
		return fmt.Errorf("timeout %d out of [0, MaxSeconds]", r.Timeout)
	}
	if r.Lease < 0 || r.Lease > MaxSeconds {
		return fmt.Errorf("lease %d out of [0, MaxSeconds]", r.Lease)
	}
	if r.TTL < 0 || r.TTL > MaxSeconds {
		return fmt.Errorf("ttl %d out of [0, MaxSeconds]", r.TTL)
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
	if r.Op == OpSignal && bytes.ContainsAny(r.Key, "*>") {
		return fmt.Errorf("signal to pattern %q accepted", r.Key)
	}
	switch shape {
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
	if (shape == OpRenew || shape == OpSemRenew) && len(bytes.Fields(r.Token)) != 1 {
		return fmt.Errorf("renew token %q is not one field", r.Token)
	}
	if r.Op == OpStableRef && len(r.Token) > MaxStableRef {
		return fmt.Errorf("stable-ref of %d bytes", len(r.Token))
	}
	switch shape {
	case OpLock, OpWait, OpSemLock, OpSemWait, OpBWait:
	default:
		if r.Timeout != 0 {
			return fmt.Errorf("timeout set for %v", r.Op)
		}
	}
	switch shape {
	case OpLock, OpRenew, OpEnqueue, OpSemLock, OpSemRenew, OpSemEnqueue:
	default:
		if r.Lease != 0 {
			return fmt.Errorf("lease set for %v", r.Op)
		}
	}

	// rf fields (§B.5–B.11)
	switch r.Op {
	case OpKSet, OpKCAS, OpLPush, OpRPush, OpSignal:
		if len(r.Value) == 0 {
			return fmt.Errorf("empty value accepted for %v", r.Op)
		}
	case OpListen, OpUnlisten:
		if !bytes.Equal(r.Value, bytes.TrimSpace(r.Value)) {
			return fmt.Errorf("untrimmed group %q", r.Value)
		}
	default:
		if len(r.Value) != 0 {
			return fmt.Errorf("value %q set for %v", r.Value, r.Op)
		}
	}
	switch r.Op {
	case OpKSet, OpKCAS:
		if bytes.IndexByte(r.Value, '\t') >= 0 || bytes.IndexByte(r.Old, '\t') >= 0 {
			return fmt.Errorf("KV value %q / old %q holds a TAB", r.Value, r.Old)
		}
	default:
		if r.TTL != 0 {
			return fmt.Errorf("ttl set for %v", r.Op)
		}
	}
	if r.Op != OpKCAS && len(r.Old) != 0 {
		return fmt.Errorf("old %q set for %v", r.Old, r.Op)
	}
	switch r.Op {
	case OpIncr, OpDecr, OpCSet, OpLRange:
	case OpBWait:
		if r.N < 1 {
			return fmt.Errorf("barrier count %d accepted", r.N)
		}
	default:
		if r.N != 0 {
			return fmt.Errorf("n %d set for %v", r.N, r.Op)
		}
	}
	if r.Op != OpLRange && r.M != 0 {
		return fmt.Errorf("m %d set for %v", r.M, r.Op)
	}
	return nil
}
