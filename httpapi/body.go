package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Bounds of what a request carries.
const (
	// maxBody is dflockd's cap on a JSON body; a valid one is < 1 KiB.
	maxBody = 1 << 20
	// maxField is the line cap of the TCP protocol, applied to keys and
	// tokens so that whatever HTTP accepts, TCP could say too.
	maxField = 256
	// defaultBodyReadTimeout bounds a client that sends its body slowly
	// (--http-body-timeout; the server has no whole-request timeout: see
	// readHeaderTimeout). A valid body is under 1 KiB: 10 s is ample on
	// any link that can hold a lock.
	defaultBodyReadTimeout = 10 * time.Second
)

// withBodyDeadline bounds the reading of a request's body: a request that
// declares one (Content-Length, or chunked) must have sent it whole within
// Config.BodyReadTimeout of its headers. Without the bound, a client that
// stops sending holds its connection, and so a descriptor and a goroutine,
// for ever: net/http reads what a handler left unread before it answers
// or reuses the connection, and that read had no deadline. readJSON lifts
// the deadline once the body is read (a call may then rightly wait); a
// handler that never reads the body leaves it to bound net/http's read.
func (a *API) withBodyDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 { // -1: chunked, length unknown
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(a.cfg.BodyReadTimeout)) // unsupported: no deadline
		}
		next.ServeHTTP(w, r)
	})
}

// closeUnread answers r on a connection that then closes without reading
// what remains of r's body: for a request refused before its body
// matters (a failed authentication), so that a client that never sends
// its body is not waited for.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return // no body: the connection can serve the next request
	}
	// "Connection: close" makes net/http send the answer without first
	// reading the body, and a deadline already passed makes its last
	// read, before it closes, fail at once (what net/http has already
	// buffered is still taken, so a body that came whole is not lost to
	// a reset).
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// Request bodies, one per kind of call. Seconds are whole seconds; a lease
// of 0 (or none) is the server's default.
type (
	acquireBody struct {
		AcquireTimeoutS int64 `json:"acquire_timeout_s"`
		LeaseTTLS       int64 `json:"lease_ttl_s"`
	}
	semAcquireBody struct {
		AcquireTimeoutS int64 `json:"acquire_timeout_s"`
		Limit           int64 `json:"limit"`
		LeaseTTLS       int64 `json:"lease_ttl_s"`
	}
	tokenBody struct {
		Token string `json:"token"`
	}
	renewBody struct {
		Token     string `json:"token"`
		LeaseTTLS int64  `json:"lease_ttl_s"`
	}
	enqueueBody struct {
		LeaseTTLS int64 `json:"lease_ttl_s"`
	}
	semEnqueueBody struct {
		Limit     int64 `json:"limit"`
		LeaseTTLS int64 `json:"lease_ttl_s"`
	}
	waitBody struct {
		TimeoutS int64 `json:"timeout_s"`
	}
	createBody struct {
		StableRef *string `json:"stable_ref"`
	}
)

// readRequest decodes and checks the body of a call of op and returns the
// request it makes (without its key), or what is wrong with it.
func readRequest(w http.ResponseWriter, r *http.Request, op vocab.Op) (vocab.Request, string) {
	req := vocab.Request{Op: op}
	var msg string
	switch op {
	case vocab.OpLock:
		var b acquireBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = firstOf(checkSeconds("acquire_timeout_s", b.AcquireTimeoutS), checkSeconds("lease_ttl_s", b.LeaseTTLS))
			req.Timeout, req.Lease = b.AcquireTimeoutS, b.LeaseTTLS
		}
	case vocab.OpSemLock:
		var b semAcquireBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = firstOf(checkSeconds("acquire_timeout_s", b.AcquireTimeoutS), checkLimit(b.Limit), checkSeconds("lease_ttl_s", b.LeaseTTLS))
			req.Timeout, req.Limit, req.Lease = b.AcquireTimeoutS, b.Limit, b.LeaseTTLS
		}
	case vocab.OpRelease, vocab.OpSemRelease:
		var b tokenBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = checkToken(b.Token)
			req.Token = []byte(b.Token)
		}
	case vocab.OpRenew, vocab.OpSemRenew:
		var b renewBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = firstOf(checkToken(b.Token), checkSeconds("lease_ttl_s", b.LeaseTTLS))
			req.Token, req.Lease = []byte(b.Token), b.LeaseTTLS
		}
	case vocab.OpEnqueue:
		var b enqueueBody
		if msg = readJSON(w, r, &b, true); msg == "" {
			msg = checkSeconds("lease_ttl_s", b.LeaseTTLS)
			req.Lease = b.LeaseTTLS
		}
	case vocab.OpSemEnqueue:
		var b semEnqueueBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = firstOf(checkLimit(b.Limit), checkSeconds("lease_ttl_s", b.LeaseTTLS))
			req.Limit, req.Lease = b.Limit, b.LeaseTTLS
		}
	case vocab.OpWait, vocab.OpSemWait:
		var b waitBody
		if msg = readJSON(w, r, &b, false); msg == "" {
			msg = checkSeconds("timeout_s", b.TimeoutS)
			req.Timeout = b.TimeoutS
		}
	default:
		panic("httpapi: no body for op " + op.String())
	}
	return req, msg
}

// readJSON decodes r's body into v: one JSON object, no unknown field, at
// most maxBody bytes. optional lets the body be empty. It returns what is
// wrong with the body, or "".
//
// The body must come within withBodyDeadline's deadline. A body that
// fails to (or is too large, or is cut) leaves the connection to close
// once answered, with the deadline still on: what is left of it must not
// be read as the next request, nor waited for.
func readJSON(w http.ResponseWriter, r *http.Request, v any, optional bool) string {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		// No deadline while the call waits: net/http reads the
		// connection in the background to notice a client that goes
		// away, and a deadline there would end the call as if it had.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	} else {
		w.Header().Set("Connection", "close")
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return "body too large (max " + strconv.Itoa(maxBody) + " bytes)"
		}
		return "reading the body: " + err.Error()
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		if optional {
			return ""
		}
		return "missing body"
	}
	if body[0] != '{' {
		return "body must be a JSON object"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return "invalid JSON body: " + err.Error()
	}
	if _, err := dec.Token(); err != io.EOF {
		return "body must contain a single JSON value"
	}
	return ""
}

func firstOf(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

// checkKey: keys are what the TCP protocol can carry on its key line.
func checkKey(k string) string {
	switch {
	case k == "":
		return "empty key"
	case len(k) > maxField:
		return "key too long (max 256 bytes)"
	case hasBlank(k):
		return "key contains whitespace"
	}
	return ""
}

// checkToken: a token of the v2 profile is 32 lowercase hex digits (a
// fence and a salt, spec §C.1).
func checkToken(t string) string {
	switch {
	case t == "":
		return "token required"
	case len(t) > maxField:
		return "token too long (max 256 bytes)"
	case hasBlank(t):
		return "token contains whitespace"
	case !validSessionID(t): // the same form: 32 lowercase hex
		return "token must be 32 lowercase hex digits"
	}
	return ""
}

// checkSeconds: whole seconds that fit a time.Duration, as on the TCP
// protocol (vocab.MaxSeconds).
func checkSeconds(name string, v int64) string {
	switch {
	case v < 0:
		return name + " must be >= 0"
	case v > vocab.MaxSeconds:
		return name + " too large (max " + strconv.FormatInt(vocab.MaxSeconds, 10) + ")"
	}
	return ""
}

// checkLimit: a semaphore's limit is required, and capped as on the TCP
// protocol (vocab.MaxLimit).
func checkLimit(v int64) string {
	switch {
	case v <= 0:
		return "limit must be > 0"
	case v > vocab.MaxLimit:
		return "limit too large (max " + strconv.Itoa(vocab.MaxLimit) + ")"
	}
	return ""
}

// checkStableRef: V2C's connection identity, as the TCP stable-ref
// command takes it: 1 to 64 printable ASCII characters once trimmed.
func checkStableRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || len(ref) > vocab.MaxStableRef {
		return "stable_ref must be 1 to 64 characters"
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] < 0x20 || ref[i] > 0x7e {
			return "stable_ref must be printable ASCII"
		}
	}
	return ""
}

func hasBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
			return true
		}
	}
	return false
}
