package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// Defaults of "lock" and "elect".
const (
	// defaultLockTimeout matches dflockd's own client libraries.
	defaultLockTimeout = 10
	// defaultKeepalive stays well under the server's default 23 s read
	// timeout, so long leases do not get the connection dropped.
	defaultKeepalive = 10 * time.Second
)

// Environment given to CMD, so it can use the token as a fencing token.
const (
	envLockKey   = "DFLOCKCTL_KEY"
	envLockToken = "DFLOCKCTL_TOKEN"
	envLockLease = "DFLOCKCTL_LEASE"
)

const lockUsage = `usage: dflockctl lock KEY [options] [--] CMD [ARG...]

Acquire KEY on a dflockd server (with --limit N, one of N slots of the
semaphore KEY), run CMD with the lock held (renewing its lease in the
background), release it when CMD exits, and exit with CMD's status (128+N
if CMD died of signal N). SIGINT, SIGTERM, SIGHUP and SIGQUIT are
forwarded to CMD. CMD gets DFLOCKCTL_KEY, DFLOCKCTL_TOKEN and
DFLOCKCTL_LEASE in its environment.

Exit codes before CMD runs: 75 lock wait timed out, 69 server unreachable,
77 auth rejected, 127 CMD not found, 126 CMD not runnable, 2 usage, 1 other.
`

const electUsage = `usage: dflockctl elect NAME [options] [--] CMD [ARG...]

Campaign in the election NAME, run CMD while leader (renewing the
leadership in the background), resign when CMD exits, and exit with CMD's
status. Observers ("dflockctl observe NAME") see elected, then resigned.
Signals, environment and exit codes as for lock.
`

// holdKind is what lock, lock --limit and elect hold, as request functions.
type holdKind struct {
	name    string
	acquire func(c *client.Conn, key string, timeout time.Duration, lease int) (token string, granted int, err error)
	renew   func(c *client.Conn, key, token string, lease int) (int, error)
	release func(c *client.Conn, key, token string) error
}

func lockKind() holdKind {
	return holdKind{
		name: "lock",
		acquire: func(c *client.Conn, key string, timeout time.Duration, lease int) (string, int, error) {
			return client.Acquire(c, key, timeout, client.WithLeaseTTL(lease))
		},
		renew: func(c *client.Conn, key, token string, lease int) (int, error) {
			return client.Renew(c, key, token, client.WithLeaseTTL(lease))
		},
		release: client.Release,
	}
}

func semaphoreKind(limit int) holdKind {
	return holdKind{
		name: "lock",
		acquire: func(c *client.Conn, key string, timeout time.Duration, lease int) (string, int, error) {
			return client.SemAcquire(c, key, timeout, limit, client.WithLeaseTTL(lease))
		},
		renew: func(c *client.Conn, key, token string, lease int) (int, error) {
			return client.SemRenew(c, key, token, client.WithLeaseTTL(lease))
		},
		release: client.SemRelease,
	}
}

func electKind() holdKind {
	return holdKind{
		name: "elect",
		acquire: func(c *client.Conn, key string, timeout time.Duration, lease int) (string, int, error) {
			token, granted, _, err := client.NewLeaderConn(c).Elect(key, timeout, client.WithLeaseTTL(lease))
			return token, granted, err
		},
		renew: func(c *client.Conn, key, token string, lease int) (int, error) {
			n, _, err := client.NewLeaderConn(c).Renew(key, token, client.WithLeaseTTL(lease))
			return n, err
		},
		release: func(c *client.Conn, key, token string) error { return client.NewLeaderConn(c).Resign(key, token) },
	}
}

// grant is a held lock, semaphore slot or leadership.
type grant struct {
	token string
	lease int
	at    time.Time // when the grant arrived: the lease began before
}

// holding is the hold's connection, as the lease keeper renews on it and
// the release uses it. With --cluster or --endpoints (rides), a
// connection that broke (its member died: a failover) is replaced by a
// new one to the cluster, where the hold is renewed and released by
// token: a cluster keeps the holds of a leader that died until their
// leases end.
type holding struct {
	s     *session
	key   string
	kind  holdKind
	rides bool

	mu   sync.Mutex
	conn *client.Conn // unbound from any context
}

func newHolding(s *session, key string, kind holdKind, conn *client.Conn) *holding {
	return &holding{s: s, key: key, kind: kind, rides: len(s.s.dialer.Members) > 0, conn: conn}
}

// current returns the connection to use, dialling the cluster again
// (the client waits for a leader) if the one in use broke.
func (h *holding) current(ctx context.Context) (*client.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conn.Err() == nil || !h.rides {
		return h.conn, nil
	}
	conn, err := h.s.cl.Conn(ctx, h.key)
	if err != nil {
		return nil, err
	}
	h.conn = conn.WithContext(context.Background())
	return h.conn, nil
}

func (h *holding) Renew(ctx context.Context, key, token string, lease int) (int, error) {
	conn, err := h.current(ctx)
	if err != nil {
		return 0, err
	}
	return h.kind.renew(conn.WithContext(ctx), key, token, lease)
}

type lockFlags struct {
	timeout    wholeSeconds
	lease      wholeSeconds
	limit      wholeSeconds
	keepalive  seconds
	killOnLost bool
}

func (c *cli) lock(g *globals, args []string) int { return c.hold(g, args, lockUsage, false) }

func (c *cli) elect(g *globals, args []string) int { return c.hold(g, args, electUsage, true) }

// hold is lock and elect: take the hold, run CMD under it, give it back.
func (c *cli) hold(g *globals, args []string, usage string, election bool) int {
	lf := lockFlags{
		timeout:   wholeSeconds{n: defaultLockTimeout},
		lease:     wholeSeconds{min: 1},
		limit:     wholeSeconds{min: 1},
		keepalive: seconds{d: defaultKeepalive},
	}
	name := "lock"
	if election {
		name = "elect"
	}
	fset := flag.NewFlagSet("dflockctl "+name, flag.ContinueOnError)
	g.register(fset)
	fset.Var(&lf.timeout, "timeout", "wait at most `seconds`; 0 tries once")
	fset.Var(&lf.lease, "lease", "lease in `seconds` (default: the server's, usually 33)")
	if !election {
		fset.Var(&lf.limit, "limit", "hold one of `N` slots of a semaphore instead of a lock")
	}
	fset.Var(&lf.keepalive, "keepalive", "renew at least every `seconds`, below the server's read timeout; 0 = only every lease/3")
	fset.BoolVar(&lf.killOnLost, "kill-on-lost", false, "send CMD SIGTERM if the lease is lost")
	pos, argv, err := parseArgs(fset, args, 1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, usage+"\noptions:\n")
		printOptions(c.stdout, fset)
		return exitOK
	}
	switch {
	case err != nil:
	case len(pos) != 1:
		err = errors.New("want a KEY")
	case len(argv) == 0:
		err = errors.New("want a command to run after KEY (and an optional --)")
	}
	if err != nil {
		return c.fail(exitUsage, "%s: %v", name, err)
	}
	key := pos[0]
	kind := lockKind()
	switch {
	case election:
		kind = electKind()
	case lf.limit.n > 0:
		kind = semaphoreKind(lf.limit.n)
	}
	s, code := c.open(name, g)
	if s == nil {
		return code
	}
	defer s.close()

	// Resolve CMD before taking the lock: a typo should not cost a lock
	// round trip or hold up other clients. LookPath also checks paths with
	// a slash, which exec.Command leaves to Start.
	if _, err := exec.LookPath(argv[0]); err != nil {
		return c.fail(startFailureCode(err), "%s: %v", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return c.fail(startFailureCode(cmd.Err), "%s: %v", name, cmd.Err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr

	// Signals are caught from here on: before CMD runs they abandon the
	// wait, afterwards they are forwarded.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)

	conn, gr, code := c.acquireWhileWatching(sigs, s, kind, key, lf.timeout.n, lf.lease.n)
	if conn == nil {
		return code
	}
	h := newHolding(s, key, kind, conn)

	cmd.Env = append(os.Environ(),
		envLockKey+"="+key, envLockToken+"="+gr.token, envLockLease+"="+strconv.Itoa(gr.lease))
	if err := cmd.Start(); err != nil {
		c.release(h, key, gr)
		return c.fail(startFailureCode(err), "%s: %v", name, err)
	}
	lost := c.supervise(cmd, sigs, h, key, gr, renewEvery(gr.lease, lf.keepalive.d), lf.killOnLost)
	if !lost {
		c.release(h, key, gr)
	}
	return exitStatus(cmd.ProcessState)
}

// acquireWhileWatching connects and waits for the hold; a stop signal
// abandons the wait (closing the connection withdraws it on the server).
// It returns the connection and grant, or nil and an exit code.
func (c *cli) acquireWhileWatching(sigs <-chan os.Signal, s *session, kind holdKind, key string, timeout, lease int) (*client.Conn, grant, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		conn *client.Conn
		gr   grant
		code int
	}
	done := make(chan result, 1)
	go func() {
		conn, code := s.conn(ctx, key)
		if conn == nil {
			done <- result{code: code}
			return
		}
		token, granted, err := kind.acquire(conn.WithContext(ctx), key, time.Duration(timeout)*time.Second, lease)
		switch {
		case err == nil:
			// Unbound from ctx, which ends with this function: renewals
			// and the release come later.
			done <- result{conn: conn.WithContext(context.Background()), gr: grant{token, granted, time.Now()}}
			return
		case errors.Is(err, client.ErrTimeout):
			code = c.fail(exitBusy, "%s: timed out after %ds waiting for %q", kind.name, timeout, key)
		case ctx.Err() != nil:
			code = exitFailure // replaced by the signal's code below
		default:
			code = s.fail(err)
		}
		done <- result{code: code}
	}()
	select {
	case r := <-done:
		return r.conn, r.gr, r.code
	case sig := <-sigs:
		cancel()
		<-done
		return nil, grant{}, c.fail(signalCode(sig), "%s: interrupted by %v while waiting for %q", kind.name, sig, key)
	}
}

// supervise runs until CMD exits: it forwards signals, keeps the lease
// alive and reports (and with killOnLost acts on) its loss. It returns
// whether the lease was lost.
func (c *cli) supervise(cmd *exec.Cmd, sigs <-chan os.Signal, h *holding, key string, gr grant, every time.Duration, killOnLost bool) bool {
	keepCtx, stopKeeping := context.WithCancel(context.Background())
	kept := make(chan error, 1)
	go func() { kept <- keepLease(keepCtx, h, key, gr, every, h.rides) }()
	exited := make(chan struct{})
	go func() {
		cmd.Wait() // the status is read from cmd.ProcessState
		close(exited)
	}()

	lost := false
	pending := kept // nil once the keeper has reported
	for waiting := true; waiting; {
		select {
		case sig := <-sigs:
			cmd.Process.Signal(sig) // fails only if CMD is already gone
		case err := <-pending:
			pending = nil
			lost = true
			c.warnLost(h.kind.name, key, err, killOnLost)
			if killOnLost {
				cmd.Process.Signal(syscall.SIGTERM)
			}
		case <-exited:
			waiting = false
		}
	}
	stopKeeping()
	if pending != nil {
		if err := <-pending; err != nil {
			lost = true
			c.warnLost(h.kind.name, key, err, false)
		}
	}
	return lost
}

func (c *cli) warnLost(what, key string, err error, killing bool) {
	also := "the command keeps running without it"
	if killing {
		also = "sending the command SIGTERM (--kill-on-lost)"
	}
	noun := "the lock"
	if what == "elect" {
		noun = "the leadership"
	}
	fmt.Fprintf(c.stderr, "dflockctl: warning: lost %s on %q: %v; %s\n", noun, key, err, also)
}

// release gives the hold back (by token on a new connection if a
// failover broke the one it was granted on); failure only warrants a
// warning, because closing the connection afterwards releases it too on
// servers with auto-release (the default), and the lease runs out
// otherwise.
func (c *cli) release(h *holding, key string, gr grant) {
	conn, err := h.current(context.Background())
	if err == nil {
		err = h.kind.release(conn, key, gr.token)
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "dflockctl: warning: releasing %q: %v\n", key, err)
	}
}

// startFailureCode maps a failure to find or start CMD to the shell's
// codes: 127 not found, 126 found but not runnable.
func startFailureCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return exitNotFound
	}
	return exitCannotRun
}

// exitStatus is CMD's exit code, or 128+N if signal N killed it, as a
// shell reports it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignal + int(ws.Signal())
	}
	return ps.ExitCode()
}
