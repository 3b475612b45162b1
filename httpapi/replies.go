package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/dflockd-ng/dflockd/vocab"
)

// The error codes of spec §F.2, the "error" field of every error body.
const (
	codeBadRequest       = "bad_request"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
	codeNotFound         = "not_found"
	codeNotHeld          = "not_held"
	codeMethodNotAllowed = "method_not_allowed"
	codeClientCanceled   = "client_canceled"
	codeLimitMismatch    = "limit_mismatch"
	codeAlreadyEnqueued  = "already_enqueued"
	codeNotEnqueued      = "not_enqueued"
	codeLeaseExpired     = "lease_expired"
	codeSessionGone      = "session_gone"
	codeRateLimited      = "rate_limited"
	codeMaxLocks         = "max_locks"
	codeMaxWaiters       = "max_waiters"
	codeMaxSessions      = "max_sessions"
	codeMaxSessionsPerIP = "max_sessions_per_ip"
	codeMaxStreamsPerIP  = "max_streams_per_ip"
	codeDraining         = "draining"
	codeFencePersistence = "fence_persistence"
	// codeTypeMismatch is not in dflockd v2's map: its HTTP API cannot
	// meet a read-write lock. Here a TCP client may make one (the
	// redis-feats primitives work in every profile), and a lock call on
	// its key is a conflict like limit_mismatch.
	codeTypeMismatch = "type_mismatch"
	codeInternal     = "internal"
	// The cluster's (spec §G; cluster.go): a member that does not lead,
	// admin routes without an admin token, and a raft call that failed
	// on the leader (unavailable: not in dflockd's map, whose cluster
	// answers such failures 400 with a code of its own).
	codeNotLeader     = "not_leader"
	codeAdminDisabled = "admin_disabled"
	codeUnavailable   = "unavailable"
)

// errorFor maps an engine status that is not a success of op to its HTTP
// status and error code.
func (a *API) errorFor(op vocab.Op, st vocab.Status) (int, string) {
	switch st {
	case vocab.StatusError:
		switch op {
		case vocab.OpRelease, vocab.OpSemRelease, vocab.OpRenew, vocab.OpSemRenew:
			// Unknown key, wrong token, or a lease that ran out.
			return http.StatusNotFound, codeNotHeld
		}
		// An acquire or wait ends with error when a drain ends the wait
		// or refuses to start one, and when no fence can be issued
		// (spec §C.3).
		if a.draining() {
			return http.StatusServiceUnavailable, codeDraining
		}
		return http.StatusServiceUnavailable, codeFencePersistence
	case vocab.StatusErrorMaxLocks:
		return http.StatusServiceUnavailable, codeMaxLocks
	case vocab.StatusErrorMaxWaiters:
		return http.StatusServiceUnavailable, codeMaxWaiters
	case vocab.StatusErrorLimitMismatch:
		return http.StatusConflict, codeLimitMismatch
	case vocab.StatusErrorAlreadyEnqueued:
		return http.StatusConflict, codeAlreadyEnqueued
	case vocab.StatusErrorNotEnqueued:
		return http.StatusConflict, codeNotEnqueued
	case vocab.StatusErrorLeaseExpired:
		return http.StatusConflict, codeLeaseExpired
	case vocab.StatusErrorDraining:
		return http.StatusServiceUnavailable, codeDraining
	case vocab.StatusErrorTypeMismatch:
		return http.StatusConflict, codeTypeMismatch
	}
	return http.StatusInternalServerError, codeInternal
}

// Bodies of the replies.
type (
	errorReply struct {
		Error  string `json:"error"`
		Detail string `json:"detail,omitempty"`
	}
	statusReply struct {
		Status string `json:"status"`
	}
	sessionReply struct {
		SessionID    string `json:"session_id"`
		IdleTimeoutS int64  `json:"idle_timeout_s"`
	}
	// grantReply answers acquire, enqueue and wait: status ok, acquired,
	// queued or timeout; token and lease only with a grant.
	grantReply struct {
		Status    string `json:"status"`
		Token     string `json:"token,omitempty"`
		LeaseTTLS int64  `json:"lease_ttl_s,omitempty"`
	}
	renewReply struct {
		RemainingS int64 `json:"remaining_s"`
	}
)

// writeJSON writes v as the JSON body of a reply.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("httpapi: a reply that does not marshal: " + err.Error()) // our own structs
	}
	writeRawJSON(w, status, append(b, '\n'))
}

// writeRawJSON writes b, a JSON document, as a reply's body.
func writeRawJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(b)
}

// writeError writes an error reply: {"error":code,"detail":detail}.
func writeError(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, errorReply{Error: code, Detail: detail})
}
