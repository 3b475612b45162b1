package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// lineScript runs the workloads over the dflockd line protocol.
type lineScript struct {
	workload    Workload
	pipelined   bool // depth > 1: shared-key acquires must not block
	lease       []byte
	lockTimeout int64 // s; own keys are never contended, any wait is a bug
	longTimeout int64 // s; outlives the run so a queued acquire never times out
	semLimit    int64
	hotKey      []byte
	semKey      []byte
	tryKeys     [][]byte
}

func newLineScript(c Config) *lineScript {
	ls := &lineScript{
		workload:    c.Workload,
		pipelined:   c.Depth > 1,
		lease:       strconv.AppendInt(nil, int64(c.Lease), 10),
		lockTimeout: 10,
		longTimeout: int64((c.Warmup+c.Duration)/time.Second) + 60,
		semLimit:    int64(c.SemLimit),
		hotKey:      []byte(c.KeyPrefix + ".hot"),
		semKey:      []byte(c.KeyPrefix + ".sem"),
	}
	for i := 0; i < c.TryKeys; i++ {
		ls.tryKeys = append(ls.tryKeys, []byte(c.KeyPrefix+".try"+strconv.Itoa(i)))
	}
	return ls
}

func (ls *lineScript) pick(s *slot) opKind {
	switch ls.workload {
	case Hot:
		return opHot
	case Sem:
		return opSem
	case Try:
		return opTry
	case Mixed:
		switch r := s.next() % 100; {
		case r < 50:
			return opLock
		case r < 75:
			return opTry
		case r < 90:
			return opSem
		default:
			return opHot
		}
	}
	return opLock
}

func (ls *lineScript) begin(s *slot, dst []byte) []byte {
	s.op = ls.pick(s)
	s.stage = stageAcquire
	s.fresh = true
	timeout := ls.longTimeout
	cmd := "l"
	switch s.op {
	case opLock:
		s.key, timeout = s.ownKey, ls.lockTimeout
	case opHot:
		s.key = ls.hotKey
	case opSem:
		s.key, cmd = ls.semKey, "sl"
	case opTry:
		s.key, timeout = ls.tryKeys[s.next()%uint64(len(ls.tryKeys))], 0
	}
	if ls.pipelined && s.op != opLock {
		timeout = 0
	}
	s.tryOnly = timeout == 0
	s.timeout = timeout
	dst = append(dst, cmd...)
	dst = append(dst, '\n')
	dst = append(dst, s.key...)
	dst = append(dst, '\n')
	dst = strconv.AppendInt(dst, timeout, 10)
	if s.op == opSem {
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, ls.semLimit, 10)
	}
	dst = append(dst, ' ')
	dst = append(dst, ls.lease...)
	return append(dst, '\n')
}

// Reasons a dflockd reply is rejected.
var (
	errWantGrant   = errors.New("want a grant \"ok <32 hex> <lease>\"")
	errBadToken    = errors.New("grant token is not 32 lowercase hex digits")
	errBadLease    = errors.New("grant lease differs from the requested lease")
	errWantRelease = errors.New("want \"ok\" to a release")
)

func (ls *lineScript) handle(s *slot, r Reply, dst []byte) ([]byte, outcome, error) {
	line := r.Str
	if s.stage == stageRelease {
		if string(line) != "ok" {
			return dst, 0, errWantRelease
		}
		return dst, cyclePair, nil
	}
	if s.tryOnly && string(line) == "timeout" {
		return dst, cycleMiss, nil
	}
	tok, err := parseGrant(line, ls.lease)
	if err != nil {
		return dst, 0, err
	}
	copy(s.token[:], tok)
	s.stage = stageRelease
	if s.op == opSem {
		dst = append(dst, "sr\n"...)
	} else {
		dst = append(dst, "r\n"...)
	}
	dst = append(dst, s.key...)
	dst = append(dst, '\n')
	dst = append(dst, s.token[:]...)
	return append(dst, '\n'), cycleContinues, nil
}

// parseGrant checks "ok <token> <lease>" and returns the token, which
// aliases line.
func parseGrant(line, lease []byte) ([]byte, error) {
	const prefix = "ok "
	if len(line) < len(prefix) || string(line[:len(prefix)]) != prefix {
		return nil, errWantGrant
	}
	rest := line[len(prefix):]
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		return nil, errWantGrant
	}
	tok := rest[:sp]
	if !isToken(tok) {
		return nil, errBadToken
	}
	if !bytes.Equal(rest[sp+1:], lease) {
		return nil, errBadLease
	}
	return tok, nil
}

// isToken reports whether b is exactly 32 lowercase hex digits, the shape of
// every dflockd token (random or fence-prefixed).
func isToken(b []byte) bool {
	if len(b) != tokenLen {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (ls *lineScript) describe(s *slot) string {
	if s.stage == stageRelease {
		cmd := "r"
		if s.op == opSem {
			cmd = "sr"
		}
		return fmt.Sprintf("%s %s %s", cmd, s.key, s.token[:])
	}
	switch s.op {
	case opSem:
		return fmt.Sprintf("sl %s %d %d %s", s.key, s.timeout, ls.semLimit, ls.lease)
	default:
		return fmt.Sprintf("l %s %d %s", s.key, s.timeout, ls.lease)
	}
}
