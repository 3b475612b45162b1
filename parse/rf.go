package parse

import (
	"bytes"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Grammar of the redis-feats primitives (spec §B.4–B.12). Keys have been
// validated by Parse before these run.

func parseRF(r vocab.Request, arg []byte) (vocab.Request, error) {
	var fs [maxFields][]byte
	switch r.Op {
	case vocab.OpReadLock, vocab.OpWriteLock, vocab.OpElect: // like l
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		if err := timeout(&r, fs[0]); err != nil {
			return r, err
		}
		return r, optLease(&r, fs[1], n == 2)
	case vocab.OpReadRelease, vocab.OpWriteRelease, vocab.OpResign: // like r
		r.Token = trimSpace(arg)
		if len(r.Token) == 0 {
			return r, ErrEmptyToken
		}
		return r, nil
	case vocab.OpReadRenew, vocab.OpWriteRenew: // like n
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return r, ErrArgCount
		}
		r.Token = fs[0]
		return r, optLease(&r, fs[1], n == 2)
	case vocab.OpReadEnqueue, vocab.OpWriteEnqueue: // like e
		n := fields(arg, &fs)
		if n > 1 {
			return r, ErrArgCount
		}
		return r, optLease(&r, fs[0], n == 1)
	case vocab.OpReadWait, vocab.OpWriteWait, vocab.OpBLPop, vocab.OpBRPop: // like w
		if fields(arg, &fs) != 1 {
			return r, ErrArgCount
		}
		return r, timeout(&r, fs[0])
	case vocab.OpIncr, vocab.OpDecr, vocab.OpCSet:
		v, ok := atoi(trimSpace(arg))
		if !ok {
			return r, ErrBadInteger
		}
		r.N = v
		return r, nil
	case vocab.OpGet, vocab.OpKGet, vocab.OpKDel, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpWatch, vocab.OpUnwatch, vocab.OpObserve, vocab.OpUnobserve:
		return r, nil
	case vocab.OpKSet:
		return parseKSet(r, arg)
	case vocab.OpKCAS:
		return parseKCAS(r, arg)
	case vocab.OpLPush, vocab.OpRPush:
		if len(arg) == 0 {
			return r, ErrArgCount
		}
		r.Value = arg
		return r, nil
	case vocab.OpLRange:
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
	case vocab.OpListen, vocab.OpUnlisten:
		r.Value = trimSpace(arg) // queue group; empty = none
		return r, nil
	case vocab.OpSignal:
		if bytes.IndexAny(r.Key, "*>") >= 0 {
			return r, ErrBadKey // a signal names one literal channel
		}
		if len(arg) == 0 {
			return r, ErrArgCount
		}
		r.Value = arg
		return r, nil
	case vocab.OpBWait:
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
func parseKSet(r vocab.Request, arg []byte) (vocab.Request, error) {
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
func parseKCAS(r vocab.Request, arg []byte) (vocab.Request, error) {
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

func kvTTL(r *vocab.Request, b []byte) error {
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
