package client

import (
	"errors"
	"fmt"
	"strings"
)

// Status is the first word of a reply line.
type Status string

// Reply statuses of the commands this package sends, as the server spells
// them.
const (
	StatusOK           Status = "ok"
	StatusTimeout      Status = "timeout"
	StatusError        Status = "error"
	StatusAuth         Status = "error_auth"
	StatusMaxLocks     Status = "error_max_locks"
	StatusMaxWaiters   Status = "error_max_waiters"
	StatusLimit        Status = "error_limit_mismatch"
	StatusLeaseExpired Status = "error_lease_expired"
	StatusDraining     Status = "error_draining"
	StatusNotLeader    Status = "error_not_leader"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrTimeout: the server answered timeout to a lock request.
	ErrTimeout = errors.New("client: lock wait timed out")
	// ErrAuth: the server rejected the auth token, or wants one that was
	// not sent; it closes the connection.
	ErrAuth = errors.New("client: authentication rejected")
	// ErrBroken: an earlier failure left the connection unusable.
	ErrBroken = errors.New("client: connection unusable after an earlier failure")
	// ErrProtocol: the server sent a reply this package cannot read.
	ErrProtocol = errors.New("client: unexpected reply")
)

// ReplyError is a well-formed reply whose status is not success, for
// example error_max_locks, or error to a renew of a lost lease.
type ReplyError struct {
	Cmd   string // command sent: "l", "n", "r", …
	Reply string // the whole reply line
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("client: %s: server replied %q", e.Cmd, e.Reply)
}

// Status returns the reply's status word.
func (e *ReplyError) Status() Status {
	s, _, _ := strings.Cut(e.Reply, " ")
	return Status(s)
}
