package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid: an argument the server would refuse (or that would break the
// framing) was caught before anything was sent.
var ErrInvalid = errors.New("client: invalid argument")

// compatInvalid is an ErrInvalid whose text is exactly the one dflockd's
// redis-feats client returns for the same check, for callers (and that
// client's own tests) that compare error texts; errors.Is(err, ErrInvalid)
// still holds.
type compatInvalid string

func (e compatInvalid) Error() string        { return string(e) }
func (e compatInvalid) Is(target error) bool { return target == ErrInvalid }

func errInvalidf(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// Line limits of the server: longer lines are answered with error and the
// connection is closed, so they are refused before sending.
const (
	maxLine     = 256      // every request line
	maxAuthLine = 64 << 10 // the auth token line, on dflockd v1.15+ and dflockd-ng
)

// checkFrame refuses lines that would break the three-line framing or that
// the server would cut the connection for.
func checkFrame(cmd, key, arg string) error {
	limit := maxLine
	if cmd == "auth" {
		limit = maxAuthLine
	}
	for _, l := range [...]struct {
		name, v string
		max     int
	}{{"command", cmd, maxLine}, {"key", key, maxLine}, {"argument", arg, limit}} {
		if strings.ContainsAny(l.v, "\r\n") {
			return fmt.Errorf("%w: %s contains a line break", ErrInvalid, l.name)
		}
		if len(l.v) > l.max {
			return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, l.name, l.max)
		}
	}
	return nil
}

// validateKey refuses keys every server refuses: empty, or containing the
// white space the server splits on.
func validateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if strings.ContainsAny(key, " \t\r\n") {
		return fmt.Errorf("%w: key %q contains white space", ErrInvalid, key)
	}
	return nil
}

// validateToken refuses an empty token or one that cannot be a single
// field.
func validateToken(token string) error {
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return fmt.Errorf("%w: token %q", ErrInvalid, token)
	}
	return nil
}

// validateValue refuses values the protocol cannot carry: a line break
// would end the argument line early, and TAB separates KV fields.
func validateValue(what, v string, tabOK bool) error {
	if strings.ContainsAny(v, "\r\n") {
		return fmt.Errorf("%w: %s contains a line break", ErrInvalid, what)
	}
	if !tabOK && strings.Contains(v, "\t") {
		return fmt.Errorf("%w: %s contains a tab", ErrInvalid, what)
	}
	return nil
}

// secondsCeil converts d to the protocol's whole seconds, rounding up so
// that a sub-second timeout is not turned into a try (0).
func secondsCeil(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + time.Second - 1) / time.Second)
}

// blockingWait is how long the server may hold back the reply to cmd:
// the timeout field of the commands that wait for something, else 0.
func blockingWait(cmd, arg string) time.Duration {
	field := 0
	switch cmd {
	case "l", "sl", "rl", "wl", "elect", "w", "sw", "rw", "ww", "blpop", "brpop":
	case "bwait":
		field = 1
	default:
		return 0
	}
	f := strings.Fields(arg)
	if field >= len(f) {
		return 0
	}
	n, err := strconv.ParseInt(f[field], 10, 64)
	if err != nil || n <= 0 || n > int64(maxWaitSeconds) {
		return 0
	}
	return time.Duration(n) * time.Second
}

// maxWaitSeconds keeps a timeout far from time.Duration's overflow; it is
// still over 60 years.
const maxWaitSeconds = 1 << 31

// withLease appends the lease field to arg when a lease was asked for.
func withLease(arg string, o options) string {
	switch {
	case o.leaseTTL <= 0:
		return arg
	case arg == "":
		return strconv.Itoa(o.leaseTTL)
	}
	return arg + " " + strconv.Itoa(o.leaseTTL)
}
