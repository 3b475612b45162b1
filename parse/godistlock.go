package parse

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/dflockd-ng/dflockd/vocab"
)

// This file is the wire format of the godistlock client protocol, served on
// the optional --godistlock-port listener: one message per line, fields
// separated by single spaces, LF terminated, every request ending in a
// client-chosen nonce that its replies repeat. The grammar follows
// godistlock's own server: keywords are upper case and case-sensitive,
// fields are split on one ASCII space (so an empty field, from a doubled,
// leading or trailing space, is malformed), numbers are decimal with an
// optional sign as strconv.Atoi reads them, and timeouts are milliseconds.
// Trailing CRs before the LF are dropped, as in the dflockd framing.

// GodistlockOp identifies a godistlock request.
type GodistlockOp uint8

const (
	GodistlockUnknown GodistlockOp = iota
	GodistlockHello                // HELLO <version> <nonce>
	GodistlockOn                   // ON <lock> <timeout> <nonce>: wait for the lock
	GodistlockTry                  // TRY <lock> <timeout> <nonce>: take it if free
	GodistlockRefresh              // REFRESH <lock> <fence> <timeout> <nonce>
	GodistlockOff                  // OFF <lock> <nonce>
	GodistlockIs                   // IS <lock> <nonce>
	GodistlockStats                // STATS <nonce>
	numGodistlockOps
)

// godistlockWords and godistlockArity are the keyword and argument count
// (after the keyword, nonce included) of each op.
var (
	godistlockWords = [numGodistlockOps]string{
		GodistlockHello: "HELLO", GodistlockOn: "ON", GodistlockTry: "TRY", GodistlockRefresh: "REFRESH",
		GodistlockOff: "OFF", GodistlockIs: "IS", GodistlockStats: "STATS",
	}
	godistlockArity = [numGodistlockOps]int{
		GodistlockHello: 2, GodistlockOn: 3, GodistlockTry: 3, GodistlockRefresh: 4,
		GodistlockOff: 2, GodistlockIs: 2, GodistlockStats: 1,
	}
)

func (o GodistlockOp) String() string {
	if o == GodistlockUnknown || o >= numGodistlockOps {
		return "?"
	}
	return godistlockWords[o]
}

// Limits of the godistlock grammar.
const (
	// MaxGodistlockLine caps a request line (without its LF): the longest
	// request, REFRESH, is 8 + a 256-byte lock + a 20-digit fence + a
	// 13-digit timeout + a nonce, so 1 KiB leaves nonces ample room while
	// bounding what a connection can make the server buffer.
	MaxGodistlockLine = 1024
	// MaxGodistlockLeaseMs is dflockd's longest lease (MaxSeconds) in
	// milliseconds, so a deadline never overflows the clock.
	MaxGodistlockLeaseMs = vocab.MaxSeconds * 1000
)

// GodistlockRequest is a parsed godistlock line. Byte slices alias the
// buffer given to NextGodistlock and die with it.
type GodistlockRequest struct {
	Op      GodistlockOp
	Lock    []byte // ON, TRY, REFRESH, OFF, IS: a dflockd lock key
	Version []byte // HELLO
	Nonce   []byte // every request; on an error, set only when certain
	Fence   uint64 // REFRESH
	LeaseMs int64  // ON, TRY, REFRESH: the lease; 0 = the server default
}

// GodistlockError is a malformed request or a protocol-level failure;
// Reason is the single word sent in the ERR reply, after which the server
// closes the connection.
type GodistlockError struct{ Reason string }

func (e *GodistlockError) Error() string { return "parse: godistlock: " + e.Reason }

// The ERR reasons, with their exact wire words. The first five come from
// NextGodistlock, the rest from the connection (loop).
var (
	ErrGodistlockUnknown   = &GodistlockError{"unknown_command"}      // keyword not in the protocol
	ErrGodistlockArgs      = &GodistlockError{"wrong_argument_count"} // or an empty field
	ErrGodistlockLock      = &GodistlockError{"invalid_lock"}         // blank inside, or over MaxLine bytes
	ErrGodistlockTimeout   = &GodistlockError{"invalid_timeout"}      // not 0..MaxGodistlockLeaseMs
	ErrGodistlockFence     = &GodistlockError{"invalid_fence"}        // not a decimal uint64
	ErrGodistlockTooLong   = &GodistlockError{"line_too_long"}        // over MaxGodistlockLine
	ErrGodistlockDeadline  = &GodistlockError{"read_timeout"}         // a started line did not end in time
	ErrGodistlockPending   = &GodistlockError{"too_many_pending"}     // too many parked ONs
	ErrGodistlockDraining  = &GodistlockError{"server_draining"}      // graceful shutdown
	ErrGodistlockInternal  = &GodistlockError{"internal_error"}       // e.g. the fence journal failed
	ErrGodistlockNotLeader = &GodistlockError{"not_leader"}           // a cluster member that does not lead
)

// NextGodistlock parses the first line of b. On success it returns the
// request and n, the bytes used (LF included). ErrIncomplete: no LF yet and
// the line may still fit (n = 0). ErrLineTooLong: the line is over
// MaxGodistlockLine (n = 0); the stream cannot be resynchronised, so the
// caller answers ERR and closes. A *GodistlockError: the line (n bytes) is
// malformed; r.Op and r.Nonce are set when the keyword and field count
// were right, so the ERR can carry the nonce.
func NextGodistlock(b []byte) (r GodistlockRequest, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(b) > MaxGodistlockLine {
			return r, 0, ErrLineTooLong
		}
		return r, 0, ErrIncomplete
	}
	if i > MaxGodistlockLine {
		return r, 0, ErrLineTooLong
	}
	n = i + 1
	line := b[:i]
	for len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return parseGodistlockLine(line, n)
}

func parseGodistlockLine(line []byte, n int) (r GodistlockRequest, _ int, err error) {
	word, rest, _ := bytes.Cut(line, []byte{' '})
	r.Op = lookupGodistlock(word)
	if r.Op == GodistlockUnknown {
		return GodistlockRequest{}, n, ErrGodistlockUnknown
	}
	want := godistlockArity[r.Op]
	if len(line) == len(word) || bytes.Count(rest, []byte{' '})+1 != want {
		return GodistlockRequest{Op: r.Op}, n, ErrGodistlockArgs
	}
	var f [4][]byte
	for k := range want {
		f[k], rest, _ = bytes.Cut(rest, []byte{' '})
		if len(f[k]) == 0 {
			return GodistlockRequest{Op: r.Op}, n, ErrGodistlockArgs
		}
	}
	r.Nonce = f[want-1]
	switch r.Op {
	case GodistlockHello:
		r.Version = f[0]
	case GodistlockStats:
	default:
		r.Lock = f[0]
		if !validKey(r.Lock) || len(r.Lock) > MaxLine {
			return r, n, ErrGodistlockLock
		}
	}
	switch r.Op {
	case GodistlockOn, GodistlockTry:
		err = godistlockLease(&r, f[1])
	case GodistlockRefresh:
		v, perr := strconv.ParseUint(string(f[1]), 10, 64)
		if perr != nil {
			return r, n, ErrGodistlockFence
		}
		r.Fence = v
		err = godistlockLease(&r, f[2])
	}
	return r, n, err
}

func lookupGodistlock(word []byte) GodistlockOp {
	switch string(word) {
	case "HELLO":
		return GodistlockHello
	case "ON":
		return GodistlockOn
	case "TRY":
		return GodistlockTry
	case "REFRESH":
		return GodistlockRefresh
	case "OFF":
		return GodistlockOff
	case "IS":
		return GodistlockIs
	case "STATS":
		return GodistlockStats
	}
	return GodistlockUnknown
}

func godistlockLease(r *GodistlockRequest, b []byte) error {
	v, ok := atoi(b)
	if !ok || v < 0 || v > MaxGodistlockLeaseMs {
		return ErrGodistlockTimeout
	}
	r.LeaseMs = v
	return nil
}

// AppendGodistlockRequest appends r as a request line (the client side of
// the protocol; tests and tools use it).
func AppendGodistlockRequest(dst []byte, r *GodistlockRequest) []byte {
	dst = append(dst, r.Op.String()...)
	switch r.Op {
	case GodistlockHello:
		dst = appendField(dst, r.Version)
	case GodistlockOn, GodistlockTry:
		dst = appendField(dst, r.Lock)
		dst = strconv.AppendInt(append(dst, ' '), r.LeaseMs, 10)
	case GodistlockRefresh:
		dst = appendField(dst, r.Lock)
		dst = strconv.AppendUint(append(dst, ' '), r.Fence, 10)
		dst = strconv.AppendInt(append(dst, ' '), r.LeaseMs, 10)
	case GodistlockOff, GodistlockIs:
		dst = appendField(dst, r.Lock)
	}
	dst = appendField(dst, r.Nonce)
	return append(dst, '\n')
}

func appendField(dst, field []byte) []byte {
	return append(append(dst, ' '), field...)
}

// appendNonce writes a reply's nonce, or "-" when the request's nonce is
// unknown (a line too long, an unreadable line, a read timeout).
func appendNonce(dst, nonce []byte) []byte {
	if len(nonce) == 0 {
		return append(dst, " -"...)
	}
	return appendField(dst, nonce)
}

// AppendGodistlockHello appends "HELLO <nonce> <id> <version>\n".
func AppendGodistlockHello(dst, nonce []byte, id, version string) []byte {
	dst = appendNonce(append(dst, "HELLO"...), nonce)
	dst = append(append(dst, ' '), id...)
	dst = append(append(dst, ' '), version...)
	return append(dst, '\n')
}

// AppendGodistlockGive appends "GIVE <nonce> <fence>\n": the lock is yours.
func AppendGodistlockGive(dst, nonce []byte, fence uint64) []byte {
	dst = appendNonce(append(dst, "GIVE"...), nonce)
	return append(strconv.AppendUint(append(dst, ' '), fence, 10), '\n')
}

// AppendGodistlockLock appends "LOCK <nonce> <fence>\n": the lock is held.
func AppendGodistlockLock(dst, nonce []byte, fence uint64) []byte {
	dst = appendNonce(append(dst, "LOCK"...), nonce)
	return append(strconv.AppendUint(append(dst, ' '), fence, 10), '\n')
}

// AppendGodistlockNo appends "NO <nonce>\n".
func AppendGodistlockNo(dst, nonce []byte) []byte {
	return append(appendNonce(append(dst, "NO"...), nonce), '\n')
}

// AppendGodistlockStat appends "STATS <nonce> <name> <value>\n"; name must
// be one word.
func AppendGodistlockStat(dst, nonce []byte, name string, value int64) []byte {
	dst = appendNonce(append(dst, "STATS"...), nonce)
	dst = append(append(dst, ' '), name...)
	return append(strconv.AppendInt(append(dst, ' '), value, 10), '\n')
}

// AppendGodistlockStatsEnd appends "STATSEND <nonce>\n".
func AppendGodistlockStatsEnd(dst, nonce []byte) []byte {
	return append(appendNonce(append(dst, "STATSEND"...), nonce), '\n')
}

// AppendGodistlockErr appends "ERR <nonce> <reason>\n" for err, a
// *GodistlockError or ErrLineTooLong; anything else is internal_error.
func AppendGodistlockErr(dst, nonce []byte, err error) []byte {
	reason := ErrGodistlockInternal.Reason
	var ge *GodistlockError
	switch {
	case errors.As(err, &ge):
		reason = ge.Reason
	case errors.Is(err, ErrLineTooLong):
		reason = ErrGodistlockTooLong.Reason
	}
	dst = appendNonce(append(dst, "ERR"...), nonce)
	dst = append(append(dst, ' '), reason...)
	return append(dst, '\n')
}
