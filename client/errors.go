package client

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. The functions return them unwrapped where dflockd's own
// client does, so both errors.Is and == comparisons written against that
// client keep working.
var (
	ErrTimeout              = errors.New("client: timeout")
	ErrMaxLocks             = errors.New("client: max locks reached")
	ErrMaxWaiters           = errors.New("client: max waiters reached")
	ErrServer               = errors.New("client: server error")
	ErrNotQueued            = errors.New("client: not enqueued")
	ErrAlreadyQueued        = errors.New("client: already enqueued")
	ErrLimitMismatch        = errors.New("client: limit mismatch")
	ErrLeaseExpired         = errors.New("client: lease expired")
	ErrAuth                 = errors.New("client: authentication failed")
	ErrMaxKeys              = errors.New("client: max keys reached")
	ErrNotFound             = errors.New("client: not found")
	ErrListFull             = errors.New("client: list full")
	ErrBarrierCountMismatch = errors.New("client: barrier count mismatch")
	ErrTypeMismatch         = errors.New("client: type mismatch")
)

// Errors of this package that dflockd's client does not have.
var (
	// ErrClosed: the connection was closed or broke (I/O error, cancelled
	// request, protocol violation). Requests on it fail with an error
	// wrapping ErrClosed and the cause.
	ErrClosed = errors.New("client: connection closed")
	// ErrProtocol: the server sent something this package cannot read.
	ErrProtocol = errors.New("client: unexpected reply")
	// ErrDraining: the server is shutting down and refused the request.
	// It also matches ErrServer.
	ErrDraining error = &serverError{"client: server draining"}
	// ErrNotLeader: a cluster follower refused a mutating request and no
	// redirect could be followed, or no leader could be reached within
	// Dialer.LeaderWait. It also matches ErrServer; the concrete error is
	// a *NotLeaderError naming the leader, when known.
	ErrNotLeader error = &serverError{"client: not the cluster leader"}
	// ErrLost: a held lock's lease could not be kept (renewal failed or
	// the connection broke). See Lock.Lost.
	ErrLost = errors.New("client: lock lost")
)

// serverError is a sentinel that also matches ErrServer, so callers that
// only know dflockd's error set still see a server-side refusal.
type serverError struct{ msg string }

func (e *serverError) Error() string        { return e.msg }
func (e *serverError) Is(target error) bool { return target == ErrServer }

// NotLeaderError is the error for error_not_leader that was not (or could
// no longer be) followed: the leader is outside the configured members,
// unknown, or the redirect budget is spent; and the error of a request or
// dial in cluster mode that found no reachable leader within the Dialer's
// LeaderWait, with the last connection error in Err.
type NotLeaderError struct {
	Leader string // host:port the follower named; empty when it knew none
	Err    error  // why the last member tried could not be reached, if that was the last failure
}

func (e *NotLeaderError) Error() string {
	switch {
	case e.Err != nil && e.Leader != "":
		return "client: no cluster leader reachable (last named " + e.Leader + "): " + e.Err.Error()
	case e.Err != nil:
		return "client: no cluster leader reachable: " + e.Err.Error()
	case e.Leader == "":
		return "client: not the cluster leader (leader unknown)"
	}
	return "client: not the cluster leader; leader is " + e.Leader
}

// Is makes a *NotLeaderError match ErrNotLeader and ErrServer.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader || target == ErrServer }

// Unwrap returns Err, so that errors.As finds the connection error (a
// *net.OpError, say) of a search that gave up.
func (e *NotLeaderError) Unwrap() error { return e.Err }

// Reply statuses, as the server spells them.
const (
	statusOK        = "ok"
	statusAcquired  = "acquired"
	statusQueued    = "queued"
	statusTimeout   = "timeout"
	statusError     = "error"
	statusNil       = "nil"
	statusConflict  = "cas_conflict"
	statusAuth      = "error_auth"
	statusDraining  = "error_draining"
	statusNotLeader = "error_not_leader"
)

// statusErrors maps the refusal statuses that have a sentinel. It is the
// union of what dflockd's two client lines map per command; a status a
// command cannot produce never reaches its entry.
var statusErrors = map[string]error{
	statusTimeout:                  ErrTimeout,
	"error_max_locks":              ErrMaxLocks,
	"error_max_waiters":            ErrMaxWaiters,
	"error_limit_mismatch":         ErrLimitMismatch,
	"error_type_mismatch":          ErrTypeMismatch,
	"error_not_enqueued":           ErrNotQueued,
	"error_already_enqueued":       ErrAlreadyQueued,
	"error_lease_expired":          ErrLeaseExpired,
	"error_max_keys":               ErrMaxKeys,
	"error_list_full":              ErrListFull,
	"error_barrier_count_mismatch": ErrBarrierCountMismatch,
	statusAuth:                     ErrAuth,
	statusDraining:                 ErrDraining,
}

// replyError turns a reply that is not the success a command expects into
// an error: a sentinel when the status has one, else ErrServer wrapped
// with the command and the reply, as dflockd's client reports it.
func replyError(cmd, reply string) error {
	status, _, _ := strings.Cut(reply, " ")
	if err, ok := statusErrors[status]; ok {
		return err
	}
	return fmt.Errorf("%w: %s: %s", ErrServer, cmd, reply)
}
