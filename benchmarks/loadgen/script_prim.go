package loadgen

import (
	"bytes"
	"errors"
	"fmt"
)

// primScript runs the primitive workloads (incr, kv, list) over either
// protocol. The requests and checks are the same on both; only the wire
// form differs (primCmd names both spellings).
type primScript struct {
	workload Workload
	redis    bool
}

func newPrimScript(c Config) *primScript {
	return &primScript{workload: c.Workload, redis: c.Proto == ProtoRedis}
}

// primCmd is one primitive request.
type primCmd uint8

const (
	cmdIncr primCmd = iota
	cmdSet
	cmdGet
	cmdPush
	cmdPop
)

// Each command as dflockd and as Redis spell it. dflockd's incr takes the
// delta; INCR adds one.
var (
	lineCmds = [...]string{cmdIncr: "incr", cmdSet: "kset", cmdGet: "kget", cmdPush: "rpush", cmdPop: "lpop"}
	respCmds = [...]string{cmdIncr: "INCR", cmdSet: "SET", cmdGet: "GET", cmdPush: "RPUSH", cmdPop: "LPOP"}
)

// lineArgs is what a dflockd request without a value carries as its
// argument line: incr's delta, and "_" for the reads.
var lineArgs = [...]string{cmdIncr: "1", cmdGet: "_", cmdPop: "_"}

// hasValue reports whether the command sends the cycle's value.
func (c primCmd) hasValue() bool { return c == cmdSet || c == cmdPush }

// pending returns the command the slot has in flight.
func (ps *primScript) pending(s *slot) primCmd {
	switch {
	case ps.workload == Incr:
		return cmdIncr
	case ps.workload == KV && s.stage == stageWrite:
		return cmdSet
	case ps.workload == KV:
		return cmdGet
	case s.stage == stageWrite:
		return cmdPush
	}
	return cmdPop
}

// begin moves the slot to its next key and a fresh value, and appends the
// cycle's write.
func (ps *primScript) begin(s *slot, dst []byte) []byte {
	s.kidx++
	if s.kidx == len(s.keys) {
		s.kidx = 0
	}
	s.key = s.keys[s.kidx]
	s.stage = stageWrite
	s.fresh = true
	s.cycle++
	// The value is the slot's random half and the cycle number, so a read
	// that returns another slot's value or an older one is caught.
	copy(s.token[:tokenLen/2], s.value)
	for i, c := tokenLen-1, s.cycle; i >= tokenLen/2; i, c = i-1, c>>4 {
		s.token[i] = "0123456789abcdef"[c&15]
	}
	return ps.request(s, dst)
}

// request appends the slot's pending request.
func (ps *primScript) request(s *slot, dst []byte) []byte {
	cmd := ps.pending(s)
	if ps.redis {
		n := 2
		if cmd.hasValue() {
			n = 3
		}
		dst = AppendRESPArray(dst, n)
		dst = AppendRESPBulkString(dst, respCmds[cmd])
		dst = AppendRESPBulk(dst, s.key)
		if cmd.hasValue() {
			dst = AppendRESPBulk(dst, s.token[:])
		}
		return dst
	}
	dst = append(dst, lineCmds[cmd]...)
	dst = append(dst, '\n')
	dst = append(dst, s.key...)
	dst = append(dst, '\n')
	if cmd.hasValue() {
		dst = append(dst, s.token[:]...)
	} else {
		dst = append(dst, lineArgs[cmd]...)
	}
	return append(dst, '\n')
}

// Reasons a primitive reply is rejected.
var (
	errWantCount = errors.New("want the counter's new value as an integer")
	errWantSetOK = errors.New("want ok (RESP: +OK) to the write")
	errWantLen1  = errors.New("want list length 1: the slot's list is empty between cycles")
	errWantValue = errors.New("want the value written just before on this key, which only this slot uses")
)

func (ps *primScript) handle(s *slot, r Reply, dst []byte) ([]byte, outcome, error) {
	switch cmd := ps.pending(s); cmd {
	case cmdIncr:
		v, ok := ps.intReply(r)
		if !ok {
			return dst, 0, errWantCount
		}
		if want := s.counts[s.kidx] + 1; v != want {
			// Error path only: the message may allocate.
			return dst, 0, fmt.Errorf("want %d: each incr of a fresh key only this slot uses adds 1", want)
		}
		s.counts[s.kidx] = v
		return dst, cyclePair, nil
	case cmdSet:
		if !ps.okReply(r) {
			return dst, 0, errWantSetOK
		}
		s.stage = stageRead
		return ps.request(s, dst), cycleContinues, nil
	case cmdPush:
		if v, ok := ps.intReply(r); !ok || v != 1 {
			return dst, 0, errWantLen1
		}
		s.stage = stageRead
		return ps.request(s, dst), cycleContinues, nil
	default: // cmdGet, cmdPop
		v, ok := ps.valueReply(r)
		if !ok || !bytes.Equal(v, s.token[:]) {
			return dst, 0, errWantValue
		}
		return dst, cyclePair, nil
	}
}

// intReply decodes "ok <n>" or a RESP integer.
func (ps *primScript) intReply(r Reply) (int64, bool) {
	if ps.redis {
		return r.Int, r.Kind == KindInt
	}
	rest, ok := bytes.CutPrefix(r.Str, []byte("ok "))
	if !ok {
		return 0, false
	}
	return parseInt(rest)
}

// okReply reports a bare "ok" or RESP +OK.
func (ps *primScript) okReply(r Reply) bool {
	if ps.redis {
		return r.Kind == KindSimple && string(r.Str) == "OK"
	}
	return string(r.Str) == "ok"
}

// valueReply decodes "ok <value>" or a RESP bulk string; "nil" and RESP
// nil are not values.
func (ps *primScript) valueReply(r Reply) ([]byte, bool) {
	if ps.redis {
		return r.Str, r.Kind == KindBulk
	}
	return bytes.CutPrefix(r.Str, []byte("ok "))
}

func (ps *primScript) describe(s *slot) string {
	cmd := ps.pending(s)
	name, arg := lineCmds[cmd], lineArgs[cmd]
	if ps.redis {
		name, arg = respCmds[cmd], ""
	}
	if cmd.hasValue() {
		arg = string(s.token[:])
	}
	if arg == "" {
		return fmt.Sprintf("%s %s", name, s.key)
	}
	return fmt.Sprintf("%s %s %s", name, s.key, arg)
}
