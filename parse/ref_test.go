package parse

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/vocab"
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

var refOps = map[string]vocab.Op{
	"l": vocab.OpLock, "r": vocab.OpRelease, "n": vocab.OpRenew, "e": vocab.OpEnqueue, "w": vocab.OpWait,
	"sl": vocab.OpSemLock, "sr": vocab.OpSemRelease, "sn": vocab.OpSemRenew, "se": vocab.OpSemEnqueue, "sw": vocab.OpSemWait,
	"auth": vocab.OpAuth, "ping": vocab.OpPing, "stats": vocab.OpStats, "barrier": vocab.OpBarrier, "stable-ref": vocab.OpStableRef,
	// redis-feats primitives (§B.4–B.12)
	"rl": vocab.OpReadLock, "wl": vocab.OpWriteLock, "rr": vocab.OpReadRelease, "wr": vocab.OpWriteRelease,
	"rn": vocab.OpReadRenew, "wn": vocab.OpWriteRenew, "re": vocab.OpReadEnqueue, "we": vocab.OpWriteEnqueue,
	"rw": vocab.OpReadWait, "ww": vocab.OpWriteWait,
	"incr": vocab.OpIncr, "decr": vocab.OpDecr, "get": vocab.OpGet, "cset": vocab.OpCSet,
	"kset": vocab.OpKSet, "kget": vocab.OpKGet, "kdel": vocab.OpKDel, "kcas": vocab.OpKCAS,
	"lpush": vocab.OpLPush, "rpush": vocab.OpRPush, "lpop": vocab.OpLPop, "rpop": vocab.OpRPop, "llen": vocab.OpLLen,
	"lrange": vocab.OpLRange, "blpop": vocab.OpBLPop, "brpop": vocab.OpBRPop,
	"listen": vocab.OpListen, "unlisten": vocab.OpUnlisten, "signal": vocab.OpSignal, "watch": vocab.OpWatch, "unwatch": vocab.OpUnwatch,
	"bwait": vocab.OpBWait, "elect": vocab.OpElect, "resign": vocab.OpResign, "observe": vocab.OpObserve, "unobserve": vocab.OpUnobserve,
}

// refShape maps the rf commands whose argument grammar is borrowed from a
// lock command to that command (§B.4: rl/wl like l …; §B.7: blpop like w;
// §B.12: elect like l, resign like r).
var refShape = map[vocab.Op]vocab.Op{
	vocab.OpReadLock: vocab.OpLock, vocab.OpWriteLock: vocab.OpLock, vocab.OpElect: vocab.OpLock,
	vocab.OpReadRelease: vocab.OpRelease, vocab.OpWriteRelease: vocab.OpRelease, vocab.OpResign: vocab.OpRelease,
	vocab.OpReadRenew: vocab.OpRenew, vocab.OpWriteRenew: vocab.OpRenew,
	vocab.OpReadEnqueue: vocab.OpEnqueue, vocab.OpWriteEnqueue: vocab.OpEnqueue,
	vocab.OpReadWait: vocab.OpWait, vocab.OpWriteWait: vocab.OpWait, vocab.OpBLPop: vocab.OpWait, vocab.OpBRPop: vocab.OpWait,
}

// refArgs gives the field-count range of each numeric grammar.
var refArgs = map[vocab.Op][2]int{
	vocab.OpLock: {1, 2}, vocab.OpRenew: {1, 2}, vocab.OpSemRenew: {1, 2}, vocab.OpEnqueue: {0, 1},
	vocab.OpWait: {1, 1}, vocab.OpSemWait: {1, 1}, vocab.OpSemLock: {2, 3}, vocab.OpSemEnqueue: {1, 2},
}

// refParse is Parse written from the spec (§A.3, §A.5, §B.1, §B.2, §B.4–B.13).
func refParse(cmd, key, arg []byte) (vocab.Request, error) {
	op, ok := refOps[string(cmd)]
	if !ok {
		return vocab.Request{}, ErrUnknownCommand
	}
	r := vocab.Request{Op: op}
	switch op {
	case vocab.OpPing, vocab.OpStats, vocab.OpBarrier:
		return r, nil
	case vocab.OpAuth:
		r.Token = []byte(strings.TrimSpace(string(arg)))
		return r, nil
	case vocab.OpStableRef:
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
	if shape == vocab.OpRelease || op == vocab.OpSemRelease {
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
	case vocab.OpLock:
		if err = timeout(fs[0]); err == nil {
			err = lease(1)
		}
	case vocab.OpRenew, vocab.OpSemRenew:
		r.Token = []byte(fs[0])
		err = lease(1)
	case vocab.OpEnqueue:
		err = lease(0)
	case vocab.OpWait, vocab.OpSemWait:
		err = timeout(fs[0])
	case vocab.OpSemLock:
		if err = timeout(fs[0]); err == nil {
			if err = limit(fs[1]); err == nil {
				err = lease(2)
			}
		}
	case vocab.OpSemEnqueue:
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
func refParseRF(r *vocab.Request, key, arg string) (done bool, err error) {
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
	case vocab.OpIncr, vocab.OpDecr, vocab.OpCSet: // §B.5: one int64, trimmed
		r.N, err = integer(strings.TrimSpace(arg))
		return true, err
	case vocab.OpGet, vocab.OpKGet, vocab.OpKDel, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpWatch, vocab.OpUnwatch, vocab.OpObserve, vocab.OpUnobserve:
		return true, nil // the argument line is ignored
	case vocab.OpKSet: // §B.6: "<value>" or "<value>\t<ttl>"
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
	case vocab.OpKCAS: // §B.6: "<old>\t<new>\t<ttl>", exactly two TABs
		parts := strings.Split(arg, "\t")
		if len(parts) != 3 || parts[1] == "" {
			return true, ErrArgCount
		}
		r.Old, r.Value = []byte(parts[0]), []byte(parts[1])
		if parts[2] == "" {
			return true, nil
		}
		return true, ttl(parts[2])
	case vocab.OpLPush, vocab.OpRPush: // §B.7: raw, non-empty
		if arg == "" {
			return true, ErrArgCount
		}
		r.Value = []byte(arg)
		return true, nil
	case vocab.OpLRange: // §B.7: "<start> <stop>"
		fs := strings.Fields(arg)
		if len(fs) != 2 {
			return true, ErrArgCount
		}
		if r.N, err = integer(fs[0]); err != nil {
			return true, err
		}
		r.M, err = integer(fs[1])
		return true, err
	case vocab.OpListen, vocab.OpUnlisten: // §B.9: optional group, trimmed
		r.Value = []byte(strings.TrimSpace(arg))
		return true, nil
	case vocab.OpSignal: // §A.3, §B.9: literal channel, raw non-empty payload
		if strings.ContainsAny(key, "*>") {
			return true, ErrBadKey
		}
		if arg == "" {
			return true, ErrArgCount
		}
		r.Value = []byte(arg)
		return true, nil
	case vocab.OpBWait: // §B.11: "<count> <timeout>", count > 0 (code 13)
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
func sameRequest(a, b vocab.Request) bool {
	return a.Op == b.Op && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Token, b.Token) &&
		a.Timeout == b.Timeout && a.Lease == b.Lease && a.Limit == b.Limit &&
		bytes.Equal(a.Value, b.Value) && bytes.Equal(a.Old, b.Old) &&
		a.N == b.N && a.M == b.M && a.TTL == b.TTL
}

func requestString(r vocab.Request) string {
	return fmt.Sprintf("{%v Key:%q Token:%q Timeout:%d Lease:%d Limit:%d Value:%q Old:%q N:%d M:%d TTL:%d}",
		r.Op, r.Key, r.Token, r.Timeout, r.Lease, r.Limit, r.Value, r.Old, r.N, r.M, r.TTL)
}

// canonical renders a successfully parsed request as the shortest text
// that means the same thing: single spaces, plain decimals, "_" for unused
// lines, no optional lease when it is the default, raw values verbatim.
// The one exception: kset always spells its TTL, so that a value ending in
// CR stays wire-legal (a trailing CR would be stripped by the reader).
func canonical(r vocab.Request) (cmd, key, arg []byte) {
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
	case vocab.OpPing, vocab.OpStats, vocab.OpBarrier:
		key = []byte("_")
	case vocab.OpAuth:
		key, arg = []byte("_"), r.Token
	case vocab.OpStableRef:
		key = r.Token
	case vocab.OpRelease, vocab.OpSemRelease:
		arg = r.Token
	case vocab.OpRenew, vocab.OpSemRenew:
		arg = optLease(bytes.Clone(r.Token))
	case vocab.OpLock:
		arg = optLease(num(nil, r.Timeout, 10))
	case vocab.OpEnqueue:
		arg = optLease([]byte{})
	case vocab.OpWait, vocab.OpSemWait:
		arg = num(nil, r.Timeout, 10)
	case vocab.OpSemLock:
		arg = optLease(num(append(num(nil, r.Timeout, 10), ' '), r.Limit, 10))
	case vocab.OpSemEnqueue:
		arg = optLease(num(nil, r.Limit, 10))
	case vocab.OpIncr, vocab.OpDecr, vocab.OpCSet:
		arg = num(nil, r.N, 10)
	case vocab.OpGet, vocab.OpKGet, vocab.OpKDel, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpWatch, vocab.OpUnwatch, vocab.OpObserve, vocab.OpUnobserve:
	case vocab.OpKSet:
		arg = num(append(bytes.Clone(r.Value), '\t'), r.TTL, 10)
	case vocab.OpKCAS:
		arg = append(append(append(bytes.Clone(r.Old), '\t'), r.Value...), '\t')
		if r.TTL > 0 {
			arg = num(arg, r.TTL, 10)
		}
	case vocab.OpLPush, vocab.OpRPush, vocab.OpListen, vocab.OpUnlisten, vocab.OpSignal:
		arg = r.Value
	case vocab.OpLRange:
		arg = num(append(num(nil, r.N, 10), ' '), r.M, 10)
	case vocab.OpBWait:
		arg = num(append(num(nil, r.N, 10), ' '), r.Timeout, 10)
	default:
		panic("canonical: " + r.Op.String())
	}
	return cmd, key, arg
}

// checkRequest asserts the invariants every successfully parsed request
// satisfies, whatever its text looked like.
func checkRequest(r vocab.Request) error {
	if r.Op == vocab.OpUnknown || int(r.Op) >= vocab.NumOps {
		return errors.New("op out of range")
	}
	shape := r.Op
	if sh, ok := refShape[r.Op]; ok {
		shape = sh
	}
	if r.Timeout < 0 || r.Timeout > vocab.MaxSeconds {
		return fmt.Errorf("timeout %d out of [0, MaxSeconds]", r.Timeout)
	}
	if r.Lease < 0 || r.Lease > vocab.MaxSeconds {
		return fmt.Errorf("lease %d out of [0, MaxSeconds]", r.Lease)
	}
	if r.TTL < 0 || r.TTL > vocab.MaxSeconds {
		return fmt.Errorf("ttl %d out of [0, MaxSeconds]", r.TTL)
	}
	switch r.Op {
	case vocab.OpSemLock, vocab.OpSemEnqueue:
		if r.Limit < 1 || r.Limit > vocab.MaxLimit {
			return fmt.Errorf("limit %d out of [1, MaxLimit]", r.Limit)
		}
	default:
		if r.Limit != 0 {
			return fmt.Errorf("limit %d set for %v", r.Limit, r.Op)
		}
	}
	switch r.Op {
	case vocab.OpAuth, vocab.OpPing, vocab.OpStats, vocab.OpBarrier, vocab.OpStableRef:
		if r.Key != nil {
			return fmt.Errorf("key %q set for key-less %v", r.Key, r.Op)
		}
	default:
		if len(r.Key) == 0 || bytes.ContainsAny(r.Key, " \t\r\n") {
			return fmt.Errorf("invalid key %q accepted", r.Key)
		}
	}
	if r.Op == vocab.OpSignal && bytes.ContainsAny(r.Key, "*>") {
		return fmt.Errorf("signal to pattern %q accepted", r.Key)
	}
	switch shape {
	case vocab.OpRelease, vocab.OpSemRelease, vocab.OpRenew, vocab.OpSemRenew, vocab.OpStableRef:
		if len(r.Token) == 0 {
			return errors.New("empty token accepted")
		}
		if !bytes.Equal(r.Token, bytes.TrimSpace(r.Token)) {
			return fmt.Errorf("untrimmed token %q", r.Token)
		}
	case vocab.OpAuth:
		if !bytes.Equal(r.Token, bytes.TrimSpace(r.Token)) {
			return fmt.Errorf("untrimmed token %q", r.Token)
		}
	default:
		if r.Token != nil {
			return fmt.Errorf("token %q set for %v", r.Token, r.Op)
		}
	}
	if (shape == vocab.OpRenew || shape == vocab.OpSemRenew) && len(bytes.Fields(r.Token)) != 1 {
		return fmt.Errorf("renew token %q is not one field", r.Token)
	}
	if r.Op == vocab.OpStableRef && len(r.Token) > vocab.MaxStableRef {
		return fmt.Errorf("stable-ref of %d bytes", len(r.Token))
	}
	switch shape {
	case vocab.OpLock, vocab.OpWait, vocab.OpSemLock, vocab.OpSemWait, vocab.OpBWait:
	default:
		if r.Timeout != 0 {
			return fmt.Errorf("timeout set for %v", r.Op)
		}
	}
	switch shape {
	case vocab.OpLock, vocab.OpRenew, vocab.OpEnqueue, vocab.OpSemLock, vocab.OpSemRenew, vocab.OpSemEnqueue:
	default:
		if r.Lease != 0 {
			return fmt.Errorf("lease set for %v", r.Op)
		}
	}

	// rf fields (§B.5–B.11)
	switch r.Op {
	case vocab.OpKSet, vocab.OpKCAS, vocab.OpLPush, vocab.OpRPush, vocab.OpSignal:
		if len(r.Value) == 0 {
			return fmt.Errorf("empty value accepted for %v", r.Op)
		}
	case vocab.OpListen, vocab.OpUnlisten:
		if !bytes.Equal(r.Value, bytes.TrimSpace(r.Value)) {
			return fmt.Errorf("untrimmed group %q", r.Value)
		}
	default:
		if len(r.Value) != 0 {
			return fmt.Errorf("value %q set for %v", r.Value, r.Op)
		}
	}
	switch r.Op {
	case vocab.OpKSet, vocab.OpKCAS:
		if bytes.IndexByte(r.Value, '\t') >= 0 || bytes.IndexByte(r.Old, '\t') >= 0 {
			return fmt.Errorf("KV value %q / old %q holds a TAB", r.Value, r.Old)
		}
	default:
		if r.TTL != 0 {
			return fmt.Errorf("ttl set for %v", r.Op)
		}
	}
	if r.Op != vocab.OpKCAS && len(r.Old) != 0 {
		return fmt.Errorf("old %q set for %v", r.Old, r.Op)
	}
	switch r.Op {
	case vocab.OpIncr, vocab.OpDecr, vocab.OpCSet, vocab.OpLRange:
	case vocab.OpBWait:
		if r.N < 1 {
			return fmt.Errorf("barrier count %d accepted", r.N)
		}
	default:
		if r.N != 0 {
			return fmt.Errorf("n %d set for %v", r.N, r.Op)
		}
	}
	if r.Op != vocab.OpLRange && r.M != 0 {
		return fmt.Errorf("m %d set for %v", r.M, r.Op)
	}
	return nil
}
