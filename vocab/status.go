package vocab

// Status is the first word of a reply line, and the outcome the engine
// reports.
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
	StatusErrorDenied               // a policy refuses the request to its identity
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
	StatusErrorDenied:               "error_denied",
}

// String returns the status's wire word.
func (s Status) String() string { return statusText[s] }
