package parse

import (
	"bytes"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Grammar of the redis-feats primitives (spec §B.4–B.12). Keys have been
// validated by Parse before these run.

func parseRF(r *vocab.Request, arg []byte) error {
	var fs [maxFields][]byte
	switch r.Op {
	case vocab.OpReadLock, vocab.OpWriteLock, vocab.OpElect: // like l
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return ErrArgCount
		}
		if err := timeout(r, fs[0]); err != nil {
			return err
		}
		return optLease(r, fs[1], n == 2)
	case vocab.OpReadRelease, vocab.OpWriteRelease, vocab.OpResign: // like r
		r.Token = trimSpace(arg)
		if len(r.Token) == 0 {
			return ErrEmptyToken
		}
		return nil
	case vocab.OpReadRenew, vocab.OpWriteRenew: // like n
		n := fields(arg, &fs)
		if n < 1 || n > 2 {
			return ErrArgCount
		}
		r.Token = fs[0]
		return optLease(r, fs[1], n == 2)
	case vocab.OpReadEnqueue, vocab.OpWriteEnqueue: // like e
		n := fields(arg, &fs)
		if n > 1 {
			return ErrArgCount
		}
		return optLease(r, fs[0], n == 1)
	case vocab.OpReadWait, vocab.OpWriteWait, vocab.OpBLPop, vocab.OpBRPop: // like w
		if fields(arg, &fs) != 1 {
			return ErrArgCount
		}
		return timeout(r, fs[0])
	case vocab.OpIncr, vocab.OpDecr, vocab.OpCSet:
		v, ok := atoi(trimSpace(arg))
		if !ok {
			return ErrBadInteger
		}
		r.N = v
		return nil
	case vocab.OpGet, vocab.OpKGet, vocab.OpKDel, vocab.OpLPop, vocab.OpRPop, vocab.OpLLen, vocab.OpWatch, vocab.OpUnwatch, vocab.OpObserve, vocab.OpUnobserve:
		return nil
	case vocab.OpKSet:
		return parseKSet(r, arg)
	case vocab.OpKCAS:
		return parseKCAS(r, arg)
	case vocab.OpLPush, vocab.OpRPush:
		if len(arg) == 0 {
			return ErrArgCount
		}
		r.Value = arg
		return nil
	case vocab.OpLRange:
		if fields(arg, &fs) != 2 {
			return ErrArgCount
		}
		var ok bool
		if r.N, ok = atoi(fs[0]); !ok {
			return ErrBadInteger
		}
		if r.M, ok = atoi(fs[1]); !ok {
			return ErrBadInteger
		}
		return nil
	case vocab.OpListen, vocab.OpUnlisten:
		r.Value = trimSpace(arg) // queue group; empty = none
		return nil
	case vocab.OpSignal:
		if bytes.IndexAny(r.Key, "*>") >= 0 {
			return ErrBadKey // a signal names one literal channel
		}
		if len(arg) == 0 {
			return ErrArgCount
		}
		r.Value = arg
		return nil
	case vocab.OpBWait:
		if fields(arg, &fs) != 2 {
			return ErrArgCount
		}
		v, ok := atoi(fs[0])
		if !ok {
			return ErrBadInteger
		}
		if v <= 0 {
			return ErrBadLimit
		}
		r.N = v
		return timeout(r, fs[1])
	}
	panic("parse: no grammar for op " + r.Op.String())
}

// parseKSet: "<value>" or "<value>\t<ttl>" (spec §B.6). The value is raw
// (not trimmed) and cannot hold a TAB.
func parseKSet(r *vocab.Request, arg []byte) error {
	if len(arg) == 0 {
		return ErrArgCount
	}
	i := bytes.IndexByte(arg, '\t')
	if i < 0 {
		r.Value = arg
		return nil
	}
	if i == 0 {
		return ErrArgCount
	}
	r.Value = arg[:i]
	ttl := arg[i+1:]
	if bytes.IndexByte(ttl, '\t') >= 0 {
		return ErrArgCount
	}
	return kvTTL(r, ttl)
}

// parseKCAS: "<old>\t<new>\t<ttl>", exactly two TABs; empty old means the
// key must not exist, new must not be empty, empty ttl means none.
func parseKCAS(r *vocab.Request, arg []byte) error {
	i := bytes.IndexByte(arg, '\t')
	if i < 0 {
		return ErrArgCount
	}
	j := bytes.IndexByte(arg[i+1:], '\t')
	if j < 0 {
		return ErrArgCount
	}
	j += i + 1
	ttl := arg[j+1:]
	if bytes.IndexByte(ttl, '\t') >= 0 {
		return ErrArgCount
	}
	r.Old, r.Value = arg[:i], arg[i+1:j]
	if len(r.Value) == 0 {
		return ErrArgCount
	}
	if len(ttl) == 0 {
		return nil
	}
	return kvTTL(r, ttl)
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
