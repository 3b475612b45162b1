package parse

import "bytes"

// Grammar of the redis-feats primitives (spec §B.4–B.12). Keys have been
// validated by Parse before these run.

// lookupRFOp maps the rf command words; the switch does not allocate.
func lookupRFOp(cmd []byte) Op {
	switch string(cmd) {
	case "rl":
		return OpReadLock
	case "wl":
		return OpWriteLock
	case "rr":
		return OpReadRelease
	case "wr":
		return OpWriteRelease
	case "rn":
		return OpReadRenew
	case "wn":
		return OpWriteRenew
	case "re":
		return OpReadEnqueue
	case "we":
		return OpWriteEnqueue
	case "rw":
		return OpReadWait
	case "ww":
		return OpWriteWait
	case "incr":
		return OpIncr
	case "decr":
		return OpDecr
	case "get":
		return OpGet
	case "cset":
		return OpCSet
	case "kset":
		return OpKSet
	case "kget":
		return OpKGet
	case "kdel":
		return OpKDel
	case "kcas":
		return OpKCAS
	case "lpush":
		return OpLPush
	case "rpush":
		return OpRPush
	case "lpop":
		return OpLPop
	case "rpop":
		return OpRPop
	case "llen":
		return OpLLen
	case "lrange":
		return OpLRange
	case "blpop":
		return OpBLPop
	case "brpop":
		return OpBRPop
	case "listen":
		return OpListen
	case "unlisten":
		return OpUnlisten
	case "signal":
		return OpSignal
	case "watch":
		return OpWatch
	case "unwatch":
		return OpUnwatch
	case "bwait":
		return OpBWait
	case "elect":
		return OpElect
	case "resign":
		return OpResign
	case "observe":
		return OpObserve
	case "unobserve":
		return OpUnobserve
	}
	return OpUnknown
}

// ReadWrite reports whether o is a read-write lock command.
func (o Op) ReadWrite() bool { return o >= OpReadLock && o <= OpWriteWait }

// Writer reports whether a read-write lock command takes the write side.
func (o Op) Writer() bool {
	switch o {
	case OpWriteLock, OpWriteRelease, OpWriteRenew, OpWriteEnqueue, OpWriteWait:
		return true
	}
	return false
}

func parseRF(r Request, arg []byte) (Request, error) {
	var fs [maxFields][]byte
	switch r.Op {
	case OpReadLock, OpWriteLock, OpElect: // like l
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		if err := timeout(&r, fs[0]); err != nil {
			return r, err
		}
		return r, optLease(&r, fs[1], n == 2)
	case OpReadRelease, OpWriteRelease, OpResign: // like r
		r.Token = trimSpace(arg)
		if len(r.Token) == 0 {
			return r, ErrEmptyToken
		}
		return r, nil
	case OpReadRenew, OpWriteRenew: // like n
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		r.Token = fs[0]
		return r, optLease(&r, fs[1], n == 2)
	case OpReadEnqueue, OpWriteEnqueue: // like e
		n := fields(arg, &fs)
		if n > 1 {
			return r, ErrArgCount
		}
		return r, optLease(&r, fs[0], n == 1)
	case OpReadWait, OpWriteWait, OpBLPop, OpBRPop: // like w
		if fields(arg, &fs) != 1 {
			return r, ErrArgCount
		}
		return r, timeout(&r, fs[0])
	case OpIncr, OpDecr, OpCSet:
		v, ok := atoi(trimSpace(arg))
		if !ok {
			return r, ErrBadInteger
		}
		r.N = v
		return r, nil
	case OpGet, OpKGet, OpKDel, OpLPop, OpRPop, OpLLen, OpWatch, OpUnwatch, OpObserve, OpUnobserve:
		return r, nil
	case OpKSet:
		return parseKSet(r, arg)
	case OpKCAS:
		return parseKCAS(r, arg)
	case OpLPush, OpRPush:
		if len(arg) == 0 {
			return r, ErrArgCount
		}
		r.Value = arg
		return r, nil
	case OpLRange:
		if fields(arg, &fs) != 2 {
			return r, ErrArgCount
		}
		var ok bool
		if r.N, ok = atoi(fs[0]); !ok {
			return r, ErrBadInteger
		}
		if r.M, ok = atoi(fs[1]); !ok {
			return r, ErrBadInteger
		}
		return r, nil
	case OpListen, OpUnlisten:
		r.Value = trimSpace(arg) // queue group; empty = none
		return r, nil
	case OpSignal:
		if bytes.IndexAny(r.Key, "*>") >= 0 {
			return r, ErrBadKey // a signal names one literal channel
		}
		if len(arg) == 0 {
			return r, ErrArgCount
		}
		r.Value = arg
		return r, nil
	case OpBWait:
		if fields(arg, &fs) != 2 {
			return r, ErrArgCount
		}
		v, ok := atoi(fs[0])
		if !ok {
			return r, ErrBadInteger
		}
		if v <= 0 {
			return r, ErrBadLimit
		}
		r.N = v
		return r, timeout(&r, fs[1])
	}
	panic("parse: no grammar for op " + r.Op.String())
}

// parseKSet: "<value>" or "<value>\t<ttl>" (spec §B.6). The value is raw
// (not trimmed) and cannot hold a TAB.
func parseKSet(r Request, arg []byte) (Request, error) {
	if len(arg) == 0 {
		return r, ErrArgCount
	}
	i := bytes.IndexByte(arg, '\t')
	if i < 0 {
		r.Value = arg
		return r, nil
	}
	if i == 0 {
		return r, ErrArgCount
	}
	r.Value = arg[:i]
	ttl := arg[i+1:]
	if bytes.IndexByte(ttl, '\t') >= 0 {
		return r, ErrArgCount
	}
	return r, kvTTL(&r, ttl)
}

// parseKCAS: "<old>\t<new>\t<ttl>", exactly two TABs; empty old means the
// key must not exist, new must not be empty, empty ttl means none.
func parseKCAS(r Request, arg []byte) (Request, error) {
	i := bytes.IndexByte(arg, '\t')
	if i < 0 {
		return r, ErrArgCount
	}
	j := bytes.IndexByte(arg[i+1:], '\t')
	if j < 0 {
		return r, ErrArgCount
	}
	j += i + 1
	ttl := arg[j+1:]
	if bytes.IndexByte(ttl, '\t') >= 0 {
		return r, ErrArgCount
	}
	r.Old, r.Value = arg[:i], arg[i+1:j]
	if len(r.Value) == 0 {
		return r, ErrArgCount
	}
	if len(ttl) == 0 {
		return r, nil
	}
	return r, kvTTL(&r, ttl)
}

func kvTTL(r *Request, b []byte) error {
	v, err := seconds(b)
	if err != nil {
		return err
	}
	if v < 0 {
		return ErrBadInteger
	}
	r.TTL = v
	return nil
}
