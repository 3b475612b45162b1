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
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/client"
)

// Defaults of "lock".
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

Acquire KEY on a dflockd server, run CMD with the lock held (renewing its
lease in the background), release it when CMD exits, and exit with CMD's
status (128+N if CMD died of signal N). SIGINT, SIGTERM, SIGHUP and SIGQUIT
are forwarded to CMD. CMD gets DFLOCKCTL_KEY, DFLOCKCTL_TOKEN and
DFLOCKCTL_LEASE in its environment.

Exit codes before CMD runs: 75 lock wait timed out, 69 server unreachable,
77 auth rejected, 127 CMD not found, 126 CMD not runnable, 2 usage, 1 other.

options:
`

type lockFlags struct {
	endpointFlags
	timeout    wholeSeconds
	lease      wholeSeconds
	keepalive  seconds
	killOnLost bool
}

func (c *cli) lock(args []string) int {
	lf := lockFlags{
		timeout:   wholeSeconds{n: defaultLockTimeout},
		lease:     wholeSeconds{min: 1},
		keepalive: seconds{d: defaultKeepalive},
	}
	fset := flag.NewFlagSet("dflockctl lock", flag.ContinueOnError)
	lf.register(fset)
	fset.Var(&lf.timeout, "timeout", "wait at most `seconds` for the lock; 0 tries once")
	fset.Var(&lf.lease, "lease", "lease in `seconds` (default: the server's, usually 33)")
	fset.Var(&lf.keepalive, "keepalive", "renew at least every `seconds`, below the server's read timeout; 0 = only every lease/3")
	fset.BoolVar(&lf.killOnLost, "kill-on-lost", false, "send CMD SIGTERM if the lease is lost")
	pos, argv, err := parseArgs(fset, args, 1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, lockUsage)
		fset.SetOutput(c.stdout)
		fset.PrintDefaults()
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
		return c.fail(exitUsage, "lock: %v", err)
	}
	key := pos[0]
	cfg, err := lf.config(c.getenv)
	if err != nil {
		return c.fail(exitUsage, "lock: %v", err)
	}

	// Resolve CMD before taking the lock: a typo should not cost a lock
	// round trip or hold up other clients. LookPath also checks paths with
	// a slash, which exec.Command leaves to Start.
	if _, err := exec.LookPath(argv[0]); err != nil {
		return c.fail(startFailureCode(err), "lock: %v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		return c.fail(startFailureCode(cmd.Err), "lock: %v", cmd.Err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr

	// Signals are caught from here on: before CMD runs they abandon the
	// wait, afterwards they are forwarded.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)

	cl, grant, code := c.acquireWhileWatching(sigs, cfg, key, lf.timeout.n, lf.lease.n)
	if cl == nil {
		return code
	}
	defer cl.Close()

	cmd.Env = append(os.Environ(),
		envLockKey+"="+key, envLockToken+"="+grant.Token, envLockLease+"="+strconv.Itoa(grant.Lease))
	if err := cmd.Start(); err != nil {
		c.release(cl, key, grant)
		return c.fail(startFailureCode(err), "lock: %v", err)
	}
	lost := c.supervise(cmd, sigs, cl, key, grant, renewEvery(grant.Lease, lf.keepalive.d), lf.killOnLost)
	if !lost {
		c.release(cl, key, grant)
	}
	return exitStatus(cmd.ProcessState)
}

// acquireWhileWatching connects and waits for the lock; a stop signal
// abandons the wait (closing the connection withdraws it on the server).
// It returns the client and grant, or nil and an exit code.
func (c *cli) acquireWhileWatching(sigs <-chan os.Signal, cfg client.Config, key string, timeout, lease int) (*client.Client, client.Grant, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		cl    *client.Client
		grant client.Grant
		code  int
	}
	done := make(chan result, 1)
	go func() {
		cl, code := c.connect(ctx, "lock", cfg)
		if cl == nil {
			done <- result{code: code}
			return
		}
		g, err := cl.Lock(ctx, key, timeout, lease)
		switch {
		case err == nil:
			done <- result{cl: cl, grant: g}
			return
		case errors.Is(err, client.ErrTimeout):
			code = c.fail(exitBusy, "lock: timed out after %ds waiting for %q", timeout, key)
		case ctx.Err() != nil:
			code = exitFailure // replaced by the signal's code below
		default:
			code = c.serverFailure("lock "+strconv.Quote(key), cfg, err)
		}
		cl.Close()
		done <- result{code: code}
	}()
	select {
	case r := <-done:
		return r.cl, r.grant, r.code
	case sig := <-sigs:
		cancel()
		if r := <-done; r.cl != nil {
			r.cl.Close()
		}
		return nil, client.Grant{}, c.fail(signalCode(sig), "lock: interrupted by %v while waiting for %q", sig, key)
	}
}

// supervise runs until CMD exits: it forwards signals, keeps the lease
// alive and reports (and with killOnLost acts on) its loss. It returns
// whether the lease was lost.
func (c *cli) supervise(cmd *exec.Cmd, sigs <-chan os.Signal, cl *client.Client, key string, g client.Grant, every time.Duration, killOnLost bool) bool {
	keepCtx, stopKeeping := context.WithCancel(context.Background())
	kept := make(chan error, 1)
	go func() { kept <- keepLease(keepCtx, cl, key, g.Token, g.Lease, every) }()
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
			c.warnLost(key, err, killOnLost)
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
			c.warnLost(key, err, false)
		}
	}
	return lost
}

func (c *cli) warnLost(key string, err error, killing bool) {
	what := "the command keeps running without it"
	if killing {
		what = "sending the command SIGTERM (--kill-on-lost)"
	}
	fmt.Fprintf(c.stderr, "dflockctl: warning: lost the lock on %q: %v; %s\n", key, err, what)
}

// release gives the lock back; failure only warrants a warning, because
// closing the connection afterwards releases it too on servers with
// auto-release (the default), and the lease runs out otherwise.
func (c *cli) release(cl *client.Client, key string, g client.Grant) {
	if err := cl.Release(context.Background(), key, g.Token); err != nil {
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
