package parse

import (
	"errors"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Errors returned by Parse. Each maps to the single wire word "error" and
// leaves the connection open (spec §A.5); the distinction is for logs and
// tests. The numbers are dflockd's internal codes.
var (
	ErrUnknownCommand = errors.New("parse: unknown command")             // 3
	ErrBadInteger     = errors.New("parse: invalid integer")             // 4
	ErrBadKey         = errors.New("parse: empty key or key with blank") // 5
	ErrNegativeTime   = errors.New("parse: negative timeout")            // 6
	ErrEmptyToken     = errors.New("parse: empty token")                 // 7
	ErrArgCount       = errors.New("parse: wrong argument count")        // 8
	ErrBadLease       = errors.New("parse: lease must be positive")      // 9
	ErrBadLimit       = errors.New("parse: limit out of range")          // 13
)

// Parse turns a frame into a Request. The validation order follows dflockd:
// command, then key (skipped by key-less commands), then arguments.
func Parse(f Frame) (vocab.Request, error) {
	var r vocab.Request
	err := ParseInto(f, &r)
	return r, err
}

// ParseInto is Parse writing into *r, which it overwrites whole: the
// request path parses straight into the command it applies, rather than
// copying a 152-byte Request out of Parse and into the command (issue #21).
func ParseInto(f Frame, r *vocab.Request) error {
	*r = vocab.Request{Op: vocab.Named(f.Cmd)}
	switch r.Op {
	case vocab.OpUnknown:
		return ErrUnknownCommand
	case vocab.OpPing, vocab.OpStats, vocab.OpBarrier:
		return nil
	case vocab.OpAuth:
		r.Token = trimSpace(f.Arg)
		return nil
	case vocab.OpStableRef:
		return parseStableRef(r, f.Key)
	}
	if !validKey(f.Key) {
		return ErrBadKey
	}
	r.Key = f.Key
	if r.Op >= vocab.OpReadLock {
		return parseRF(r, f.Arg)
	}
	var fs [maxFields][]byte
	switch r.Op {
	case vocab.OpRelease, vocab.OpSemRelease:
		r.Token = trimSpace(f.Arg)
		if len(r.Token) == 0 {
			return ErrEmptyToken
		}
		return nil
	case vocab.OpRenew, vocab.OpSemRenew:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return ErrArgCount
		}
		r.Token = fs[0]
		return optLease(r, fs[1], n == 2)
	case vocab.OpLock:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return ErrArgCount
		}
		if err := timeout(r, fs[0]); err != nil {
			return err
		}
		return optLease(r, fs[1], n == 2)
	case vocab.OpWait, vocab.OpSemWait:
		if fields(f.Arg, &fs) != 1 {
			return ErrArgCount
		}
		return timeout(r, fs[0])
	case vocab.OpEnqueue:
		n := fields(f.Arg, &fs)
		if n > 1 {
			return ErrArgCount
		}
		return optLease(r, fs[0], n == 1)
	case vocab.OpSemLock:
		n := fields(f.Arg, &fs)
		if n < 2 || n > 3 {
			return ErrArgCount
		}
		if err := timeout(r, fs[0]); err != nil {
			return err
		}
		if err := limit(r, fs[1]); err != nil {
			return err
		}
		return optLease(r, fs[2], n == 3)
	case vocab.OpSemEnqueue:
		n := fields(f.Arg, &fs)
		if n < 1 || n > 2 {
			return ErrArgCount
		}
		if err := limit(r, fs[0]); err != nil {
			return err
		}
		return optLease(r, fs[1], n == 2)
	}
	panic("parse: no grammar for op " + r.Op.String())
}

// validKey: non-empty, without ASCII space, TAB, CR or LF (spec §A.3).
// Other bytes, invalid UTF-8 and Unicode spaces included, are legal.
func validKey(k []byte) bool {
	if len(k) == 0 {
		return false
	}
	for _, c := range k {
		switch c {
		case ' ', '\t', '\r', '\n':
			return false
		}
	}
	return true
}

func seconds(b []byte) (int64, error) {
	v, ok := atoi(b)
	if !ok || v > vocab.MaxSeconds {
		return 0, ErrBadInteger
	}
	return v, nil
}

func timeout(r *vocab.Request, b []byte) error {
	v, err := seconds(b)
	if err != nil {
		return err
	}
	if v < 0 {
		return ErrNegativeTime
	}
	r.Timeout = v
	return nil
}

func optLease(r *vocab.Request, b []byte, present bool) error {
	if !present {
		return nil
	}
	v, err := seconds(b)
	if err != nil {
		return err
	}
	if v <= 0 {
		return ErrBadLease
	}
	r.Lease = v
	return nil
}

func limit(r *vocab.Request, b []byte) error {
	v, ok := atoi(b)
	if !ok {
		return ErrBadInteger
	}
	if v <= 0 || v > vocab.MaxLimit {
		return ErrBadLimit
	}
	r.Limit = v
	return nil
}

// parseStableRef: the key line carries the ref, trimmed, 1–64 printable
// ASCII bytes (spec §A.3, §B.13).
func parseStableRef(r *vocab.Request, key []byte) error {
	ref := trimSpace(key)
	if len(ref) == 0 || len(ref) > vocab.MaxStableRef {
		return ErrArgCount
	}
	for _, c := range ref {
		if c < 0x20 || c > 0x7e {
			return ErrArgCount
		}
	}
	r.Token = ref
	return nil
}
