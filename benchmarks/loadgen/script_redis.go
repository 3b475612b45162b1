package loadgen

import (
	"errors"
	"fmt"
	"strconv"
)

// casScript deletes KEYS[1] only while it still holds ARGV[1]: the standard
// safe release of a Redis lock (a plain DEL could remove a lock another
// client took after this one's expired).
const casScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// redisScript runs the lock, try and mixed workloads over RESP with
// SET key value NX PX ttl as the acquire.
type redisScript struct {
	workload Workload
	cas      bool
	leaseMs  int64
	tryKeys  [][]byte
}

func newRedisScript(c Config) *redisScript {
	rs := &redisScript{
		workload: c.Workload,
		cas:      c.RedisRelease == ReleaseCAS,
		leaseMs:  int64(c.Lease) * 1000,
	}
	for i := 0; i < c.TryKeys; i++ {
		rs.tryKeys = append(rs.tryKeys, []byte(c.KeyPrefix+".try"+strconv.Itoa(i)))
	}
	return rs
}

func (rs *redisScript) begin(s *slot, dst []byte) []byte {
	s.op = opLock
	switch rs.workload {
	case Try:
		s.op = opTry
	case Mixed:
		if s.next()%100 >= 70 {
			s.op = opTry
		}
	}
	s.key = s.ownKey
	if s.op == opTry {
		s.key = rs.tryKeys[s.next()%uint64(len(rs.tryKeys))]
	}
	s.stage = stageAcquire
	s.fresh = true
	s.tryOnly = s.op == opTry
	dst = AppendRESPArray(dst, 6)
	dst = AppendRESPBulkString(dst, "SET")
	dst = AppendRESPBulk(dst, s.key)
	dst = AppendRESPBulk(dst, s.value)
	dst = AppendRESPBulkString(dst, "NX")
	dst = AppendRESPBulkString(dst, "PX")
	return AppendRESPBulkInt(dst, rs.leaseMs)
}

// Reasons a Redis reply is rejected.
var (
	errWantOK      = errors.New("want +OK to SET NX (nil only for a try on a shared key)")
	errWantDeleted = errors.New("want :1 (one key deleted)")
)

func (rs *redisScript) handle(s *slot, r Reply, dst []byte) ([]byte, outcome, error) {
	if s.stage == stageRelease {
		if r.Kind != KindInt || r.Int != 1 {
			return dst, 0, errWantDeleted
		}
		return dst, cyclePair, nil
	}
	if s.tryOnly && r.Kind == KindNil {
		return dst, cycleMiss, nil
	}
	if r.Kind != KindSimple || string(r.Str) != "OK" {
		return dst, 0, errWantOK
	}
	s.stage = stageRelease
	if !rs.cas {
		dst = AppendRESPArray(dst, 2)
		dst = AppendRESPBulkString(dst, "DEL")
		return AppendRESPBulk(dst, s.key), cycleContinues, nil
	}
	dst = AppendRESPArray(dst, 5)
	dst = AppendRESPBulkString(dst, "EVAL")
	dst = AppendRESPBulkString(dst, casScript)
	dst = AppendRESPBulkString(dst, "1")
	dst = AppendRESPBulk(dst, s.key)
	return AppendRESPBulk(dst, s.value), cycleContinues, nil
}

func (rs *redisScript) describe(s *slot) string {
	if s.stage == stageAcquire {
		return fmt.Sprintf("SET %s %s NX PX %d", s.key, s.value, rs.leaseMs)
	}
	if rs.cas {
		return fmt.Sprintf("EVAL <compare-and-delete> 1 %s %s", s.key, s.value)
	}
	return fmt.Sprintf("DEL %s", s.key)
}
