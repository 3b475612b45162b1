package vocab

import (
	"encoding/binary"
	"errors"
)

// The one binary encoding of a Request, for what keeps requests as bytes:
// a cluster's raft log (package cluster) and the requests an engine
// session holds behind its wait, which its snapshot carries (engine's
// queue). Both outlive a release, so the bytes are a format:
//
//	request := u8 op | key | token | value | old | timeout | lease | limit | n | m | ttl
//
// The six numbers are varints. The byte strings are uvarint-prefixed in
// one of two forms, chosen by the caller and fixed per user: the log's
// tells nil from empty (prefix len+1, 0 for nil: a request's absent value
// differs from an empty one), the engine queue's does not (prefix len,
// an empty string reads as nil) — it was written so before the two shared
// this code, and snapshots that hold it must still restore.

// StringForm is how a request's byte strings are prefixed.
type StringForm bool

const (
	// NilAware prefixes len+1, and 0 for nil (the raft log).
	NilAware StringForm = true
	// Plain prefixes len; empty and nil are one (the engine's queue).
	Plain StringForm = false
)

// ErrBadRequestBytes is returned by ReadRequest for bytes that are not a
// request of the given form.
var ErrBadRequestBytes = errors.New("vocab: not an encoded request")

// AppendRequest appends the encoding of r in form f to dst.
func AppendRequest(dst []byte, r *Request, f StringForm) []byte {
	dst = append(dst, byte(r.Op))
	for _, b := range [...][]byte{r.Key, r.Token, r.Value, r.Old} {
		switch {
		case f == Plain:
			dst = binary.AppendUvarint(dst, uint64(len(b)))
		case b == nil:
			dst = append(dst, 0)
			continue
		default:
			dst = binary.AppendUvarint(dst, uint64(len(b))+1)
		}
		dst = append(dst, b...)
	}
	for _, v := range [...]int64{r.Timeout, r.Lease, r.Limit, r.N, r.M, r.TTL} {
		dst = binary.AppendVarint(dst, v)
	}
	return dst
}

// ReadRequest decodes the request at the start of b, in form f, into r
// (overwriting its fields) and returns how many bytes it took. r's byte
// strings are slices of b, each with its capacity ending where it does,
// so that an append to one cannot overwrite what follows; b must not
// change while they are in use. An op past NumOps is refused; whether a
// known op belongs where it was read is the caller's to say.
func ReadRequest(b []byte, r *Request, f StringForm) (int, error) {
	if len(b) == 0 || int(b[0]) >= NumOps {
		return 0, ErrBadRequestBytes
	}
	*r = Request{Op: Op(b[0])}
	p := 1
	for _, s := range [...]*[]byte{&r.Key, &r.Token, &r.Value, &r.Old} {
		n, k := binary.Uvarint(b[p:])
		if k <= 0 {
			return 0, ErrBadRequestBytes
		}
		p += k
		if f == NilAware {
			if n == 0 {
				continue // nil
			}
			n--
		}
		if n > uint64(len(b)-p) {
			return 0, ErrBadRequestBytes
		}
		if f == NilAware || n > 0 {
			*s = b[p : p+int(n) : p+int(n)]
		}
		p += int(n)
	}
	for _, v := range [...]*int64{&r.Timeout, &r.Lease, &r.Limit, &r.N, &r.M, &r.TTL} {
		x, k := binary.Varint(b[p:])
		if k <= 0 {
			return 0, ErrBadRequestBytes
		}
		*v, p = x, p+k
	}
	return p, nil
}
