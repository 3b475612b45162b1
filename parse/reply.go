package parse

import "strconv"

// Status is the first word of a reply line.
type Status uint8

const (
	StatusOK Status = iota
	StatusAcquired
	StatusQueued
	StatusTimeout
	StatusError
	StatusErrorAuth
	StatusErrorMaxLocks
	StatusErrorMaxWaiters
	StatusErrorLimitMismatch
	StatusErrorNotEnqueued
	StatusErrorAlreadyEnqueued
	StatusErrorLeaseExpired
	StatusErrorDraining
	StatusNil                       // rf: no value
	StatusCASConflict               // rf: kcas found another value
	StatusErrorMaxKeys              // rf: --max-keys reached
	StatusErrorListFull             // rf: --max-list-length reached
	StatusErrorTypeMismatch         // rf: key used by another primitive kind
	StatusErrorBarrierCountMismatch // rf: bwait count differs from the barrier's
	StatusErrorNotLeader            // cluster: this node does not lead (spec §G)
	numStatuses
)

// NumStatuses bounds the Status values, for tables indexed by Status.
const NumStatuses = int(numStatuses)

// statusText is the one place the wire words live (spec §B.14).
var statusText = [numStatuses]string{
	StatusOK:                   "ok",
	StatusAcquired:             "acquired",
	StatusQueued:               "queued",
	StatusTimeout:              "timeout",
	StatusError:                "error",
	StatusErrorAuth:            "error_auth",
	StatusErrorMaxLocks:        "error_max_locks",
	StatusErrorMaxWaiters:      "error_max_waiters",
	StatusErrorLimitMismatch:   "error_limit_mismatch",
	StatusErrorNotEnqueued:     "error_not_enqueued",
	StatusErrorAlreadyEnqueued: "error_already_enqueued",
	StatusErrorLeaseExpired:    "error_lease_expired",
	StatusErrorDraining:        "error_draining",

	StatusNil:                       "nil",
	StatusCASConflict:               "cas_conflict",
	StatusErrorMaxKeys:              "error_max_keys",
	StatusErrorListFull:             "error_list_full",
	StatusErrorTypeMismatch:         "error_type_mismatch",
	StatusErrorBarrierCountMismatch: "error_barrier_count_mismatch",
	StatusErrorNotLeader:            "error_not_leader",
}

func (s Status) String() string { return statusText[s] }

// AppendStatus appends a bare status line, e.g. "timeout\n".
func AppendStatus(dst []byte, s Status) []byte {
	dst = append(dst, statusText[s]...)
	return append(dst, '\n')
}

// AppendGrant appends "<status> <token> <lease>\n" where token is the
// 32-hex token text; withFence adds the rf profile's decimal fence field.
func AppendGrant(dst []byte, s Status, token []byte, lease int64, fence uint64, withFence bool) []byte {
	dst = append(dst, statusText[s]...)
	dst = append(dst, ' ')
	dst = append(dst, token...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, lease, 10)
	if withFence {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, fence, 10)
	}
	return append(dst, '\n')
}

// AppendRenew appends "ok <remaining>\n" (rf: "ok <remaining> <fence>\n").
func AppendRenew(dst []byte, remaining int64, fence uint64, withFence bool) []byte {
	dst = append(dst, "ok "...)
	dst = strconv.AppendInt(dst, remaining, 10)
	if withFence {
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, fence, 10)
	}
	return append(dst, '\n')
}

// AppendOKInt appends "ok <n>\n" (counters, list lengths, receiver counts).
func AppendOKInt(dst []byte, n int64) []byte {
	dst = append(dst, "ok "...)
	dst = strconv.AppendInt(dst, n, 10)
	return append(dst, '\n')
}

// AppendOKText appends "ok <text>\n" for replies that carry a payload such
// as the stats JSON. text must not contain LF.
func AppendOKText(dst []byte, text []byte) []byte {
	dst = append(dst, "ok "...)
	dst = append(dst, text...)
	return append(dst, '\n')
}
