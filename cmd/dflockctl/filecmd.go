package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/filelock"
)

const fileUsage = `usage: dflockctl file try|acquire|release|status|cleanup PATH [options]

  try      one attempt; exit 0 if acquired, 75 if held
  acquire  retry every 100 ms until acquired or --timeout (default: wait forever)
  release  remove the lock file if its pid is ours (exit 77 if not)
  status   print the lock file's fields; exit 0 held, 3 free, 4 stale
  cleanup  remove the lock file only if it is stale (exit 75 if fresh)

The pid written and checked is the parent's (the calling shell's), so
"acquire" and "release" run from the same script match; use --pid to name
another process.
`

// fileFlags holds every option of the file subcommands; each subcommand
// registers only those that apply to it.
type fileFlags struct {
	tag     string
	pid     int
	force   bool
	verbose bool
	stale   seconds
	timeout seconds
}

func (c *cli) file(args []string) int {
	if len(args) == 0 {
		return c.fail(exitUsage, "file: missing subcommand\n%s", strings.TrimSuffix(fileUsage, "\n"))
	}
	sub := args[0]
	var ff fileFlags
	fs := flag.NewFlagSet("dflockctl file "+sub, flag.ContinueOnError)
	pid := func() { fs.IntVar(&ff.pid, "pid", 0, "holder `PID` to write/check (default: the parent process)") }
	stale := func() {
		fs.Var(&ff.stale, "stale", "stale timeout in `seconds` (default 3600)")
	}
	switch sub {
	case "try", "acquire":
		fs.StringVar(&ff.tag, "tag", "", "human-readable `description` written as tag=")
		pid()
		stale()
		if sub == "acquire" {
			fs.Var(&ff.timeout, "timeout", "give up after `seconds` (default: wait forever)")
			fs.BoolVar(&ff.verbose, "verbose", false, "say on stderr when waiting starts and how long it took")
		}
	case "release":
		pid()
		fs.BoolVar(&ff.force, "force", false, "remove the lock file whoever holds it")
	case "status", "cleanup":
		stale()
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stdout, fileUsage)
		return exitOK
	default:
		return c.fail(exitUsage, "file: unknown subcommand %q\n%s", sub, strings.TrimSuffix(fileUsage, "\n"))
	}
	pos, _, err := parseArgs(fs, args[1:], -1)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(c.stdout, fileUsage+"\noptions of "+sub+":\n")
		printOptions(c.stdout, fs)
		return exitOK
	}
	if err == nil && len(pos) != 1 {
		err = errors.New("want exactly one PATH")
	}
	if err == nil && ff.stale.set && ff.stale.d == 0 {
		err = errors.New("--stale must be greater than 0")
	}
	if err != nil {
		return c.fail(exitUsage, "file %s: %v", sub, err)
	}
	if ff.pid == 0 {
		// The caller is the process that holds the lock: the shell
		// running "acquire … ; work ; release", like $$ in the
		// protocol's shell example. Our own pid dies with us.
		ff.pid = os.Getppid()
	}
	lk, err := filelock.New(pos[0], filelock.Options{PID: ff.pid, Tag: ff.tag, Stale: ff.stale.d})
	if err != nil {
		return c.fail(exitUsage, "file %s: %v", sub, err)
	}

	switch sub {
	case "try":
		h, err := lk.TryAcquire()
		return c.acquired(lk, h, err)
	case "acquire":
		timeout := time.Duration(-1)
		if ff.timeout.set {
			timeout = ff.timeout.d
		}
		// A signal while waiting ends the wait between attempts rather than
		// killing us halfway through writing a lock file.
		ctx, caught, stop := signalContext()
		defer stop()
		start := time.Now()
		h, err := lk.TryAcquire()
		if errors.Is(err, filelock.ErrHeld) && timeout != 0 {
			if ff.verbose {
				fmt.Fprintf(c.stderr, "dflockctl: waiting for %s (%s)\n", lk.Path(), describe(h))
			}
			remaining := timeout // negative: forever
			if timeout > 0 {
				remaining = max(timeout-time.Since(start), 0)
			}
			h, err = lk.Acquire(ctx, remaining)
		}
		if errors.Is(err, context.Canceled) {
			sig := <-caught
			return c.fail(signalCode(sig), "file acquire %s: interrupted by %v", lk.Path(), sig)
		}
		if err == nil && ff.verbose {
			fmt.Fprintf(c.stderr, "dflockctl: acquired %s after %.1fs\n", lk.Path(), time.Since(start).Seconds())
		}
		return c.acquired(lk, h, err)
	case "release":
		h, err := lk.Release(ff.force)
		switch {
		case err == nil:
			return exitOK
		case errors.Is(err, filelock.ErrNotOwner):
			return c.fail(exitNoPerm, "%s is held by pid %d, not %d (use --pid or --force)", lk.Path(), h.PID, lk.PID())
		case errors.Is(err, filelock.ErrNotHeld):
			return c.fail(exitNoPerm, "%s: no lock file to release", lk.Path())
		}
		return c.fail(exitFailure, "file release: %v", err)
	case "status":
		h, err := lk.Stat()
		switch {
		case errors.Is(err, filelock.ErrNotHeld):
			fmt.Fprintf(c.stdout, "path=%s\nstate=free\n", lk.Path())
			return exitStatusFree
		case err != nil:
			return c.fail(exitFailure, "file status: %v", err)
		}
		printHolder(c.stdout, lk.Path(), h)
		if h.Stale {
			return exitStatusStale
		}
		return exitOK
	default: // cleanup
		h, err := lk.Cleanup()
		switch {
		case err == nil:
			fmt.Fprintf(c.stdout, "removed stale lock %s (%s)\n", lk.Path(), describe(h))
			return exitOK
		case errors.Is(err, filelock.ErrNotHeld):
			fmt.Fprintf(c.stdout, "no lock file at %s\n", lk.Path())
			return exitOK
		case errors.Is(err, filelock.ErrHeld):
			return c.fail(exitBusy, "%s is not stale (%s)", lk.Path(), describe(h))
		}
		return c.fail(exitFailure, "file cleanup: %v", err)
	}
}

// acquired turns the result of an acquisition into an exit code.
func (c *cli) acquired(lk *filelock.Lock, h filelock.Holder, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, filelock.ErrTimeout):
		return c.fail(exitBusy, "timed out: %s is held (%s)", lk.Path(), describe(h))
	case errors.Is(err, filelock.ErrHeld):
		return c.fail(exitBusy, "%s is held (%s)", lk.Path(), describe(h))
	}
	return c.fail(exitFailure, "%v", err)
}

// describe summarises a holder for messages.
func describe(h filelock.Holder) string {
	if h.PID == 0 && !h.HasTimestamp && h.Malformed == nil {
		return "holder unknown"
	}
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Tag != "" {
		s += fmt.Sprintf(", tag %q", h.Tag)
	}
	s += fmt.Sprintf(", age %ds", int64(h.Age.Seconds()))
	if h.Malformed != nil {
		s += ", malformed"
	}
	return s
}

// printHolder writes status output in the lock file's own key=value
// style, so it is as easy to parse as the file.
func printHolder(w io.Writer, path string, h filelock.Holder) {
	state := "held"
	if h.Stale {
		state = "stale"
	}
	fmt.Fprintf(w, "path=%s\nstate=%s\n", path, state)
	if h.PID != 0 {
		fmt.Fprintf(w, "pid=%d\n", h.PID)
	}
	if h.HasTimestamp {
		fmt.Fprintf(w, "timestamp=%d\n", h.Timestamp)
	}
	if h.Tag != "" {
		fmt.Fprintf(w, "tag=%s\n", h.Tag)
	}
	fmt.Fprintf(w, "age=%d\nstale=%t\n", int64(h.Age.Seconds()), h.Stale)
	if h.Malformed != nil {
		fmt.Fprintf(w, "malformed=%v\n", h.Malformed)
	}
}
