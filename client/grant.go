package client

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// grant is a held slot of a lock, semaphore, read-write lock or election.
type grant struct {
	token string // proves ownership for renew and release
	lease int    // seconds the lease lasts unless renewed
	fence uint64 // the separate fence field of redis-feats servers; 0 when absent
}

// Command names of the lock family, per kind of key.
type lockCmds struct {
	acquire, release, renew, enqueue, wait string
}

var (
	lockFamily  = lockCmds{"l", "r", "n", "e", "w"}
	semFamily   = lockCmds{"sl", "sr", "sn", "se", "sw"}
	readFamily  = lockCmds{"rl", "rr", "rn", "re", "rw"}
	writeFamily = lockCmds{"wl", "wr", "wn", "we", "ww"}
)

// acquireArg is "<timeout_s>[ <limit>][ <lease_s>]"; limit 0 means none.
func acquireArg(timeout time.Duration, limit int, o options) string {
	arg := strconv.Itoa(secondsCeil(timeout))
	if limit != 0 {
		arg += " " + strconv.Itoa(limit)
	}
	return withLease(arg, o)
}

// acquire sends an acquire-like request (l, sl, rl, wl, elect, and the
// waits w, sw, rw, ww) and reads the grant.
func acquire(c *Conn, cmd, key, arg string) (grant, error) {
	if err := validateKey(key); err != nil {
		return grant{}, err
	}
	reply, err := c.request(cmd, key, arg)
	if err != nil {
		return grant{}, err
	}
	if reply == statusError && strings.HasSuffix(cmd, "w") {
		return grant{}, ErrServer // as dflockd's client reports a failed wait
	}
	return parseGrant(cmd, reply, statusOK)
}

// parseGrant reads "<want> <token> <lease>" with an optional fence field,
// which redis-feats servers (and dflockd-ng with --compat=rf) add.
func parseGrant(cmd, reply, want string) (grant, error) {
	f := strings.Fields(reply)
	if len(f) == 0 || f[0] != want {
		return grant{}, replyError(cmd, reply)
	}
	if len(f) != 3 && len(f) != 4 {
		return grant{}, fmt.Errorf("%w: %s: %s", ErrServer, cmd, reply)
	}
	lease, err := strconv.Atoi(f[2])
	if err != nil {
		return grant{}, fmt.Errorf("%w: %s: bad lease %q", ErrServer, cmd, f[2])
	}
	g := grant{token: f[1], lease: lease}
	if len(f) == 4 {
		if g.fence, err = strconv.ParseUint(f[3], 10, 64); err != nil {
			return grant{}, fmt.Errorf("%w: %s: bad fence %q", ErrServer, cmd, f[3])
		}
	}
	return g, nil
}

// enqueue sends e, se, re or we: the first phase of a two-phase acquire.
// status is "acquired" (with the grant) or "queued".
func enqueue(c *Conn, cmd, key, arg string) (status string, g grant, err error) {
	if err := validateKey(key); err != nil {
		return "", grant{}, err
	}
	reply, err := c.request(cmd, key, arg)
	if err != nil {
		return "", grant{}, err
	}
	if reply == statusQueued {
		return statusQueued, grant{}, nil
	}
	if g, err = parseGrant(cmd, reply, statusAcquired); err != nil {
		return "", grant{}, err
	}
	return statusAcquired, g, nil
}

// renew sends n, sn, rn or wn and reads "ok <remaining> [<fence>]".
func renew(c *Conn, cmd, key, token string, o options) (remaining int, fence uint64, err error) {
	if err := validateKey(key); err != nil {
		return 0, 0, err
	}
	if err := validateToken(token); err != nil {
		return 0, 0, err
	}
	reply, err := c.request(cmd, key, withLease(token, o))
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(reply)
	if len(f) == 0 || f[0] != statusOK {
		return 0, 0, replyError(cmd, reply)
	}
	if len(f) != 2 && len(f) != 3 {
		return 0, 0, fmt.Errorf("%w: %s: %s", ErrServer, cmd, reply)
	}
	if remaining, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("%w: %s: bad remaining %q", ErrServer, cmd, f[1])
	}
	if len(f) == 3 {
		if fence, err = strconv.ParseUint(f[2], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("%w: %s: bad fence %q", ErrServer, cmd, f[2])
		}
	}
	return remaining, fence, nil
}

// release sends r, sr, rr, wr or resign.
func release(c *Conn, cmd, key, token string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := validateToken(token); err != nil {
		return err
	}
	return expectOK(c, cmd, key, token)
}

// expectOK sends a request whose only success is a bare ok.
func expectOK(c *Conn, cmd, key, arg string) error {
	reply, err := c.request(cmd, key, arg)
	if err != nil {
		return err
	}
	if reply != statusOK {
		return replyError(cmd, reply)
	}
	return nil
}
