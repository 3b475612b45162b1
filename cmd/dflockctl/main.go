// Dflockctl is the command-line companion of dflockd-ng. It has two
// independent halves:
//
//   - "dflockctl file …" manages file-based semaphore lock files (protocol
//     in package filelock) and needs no server;
//   - "dflockctl lock|stats|ping" talk to a dflockd server (package
//     client); "lock" holds a server lock for as long as a command runs.
//
// Exit codes are listed in exitcode.go and README.md.
package main

import (
	"fmt"
	"io"
	"os"
)

// cli carries the process's outside world so tests can run subcommands
// in-process.
type cli struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func main() {
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(c.run(os.Args[1:]))
}

const usageText = `usage:
  dflockctl file try     PATH [--tag T] [--stale S] [--pid N]
  dflockctl file acquire PATH [--tag T] [--stale S] [--pid N] [--timeout S]
  dflockctl file release PATH [--pid N] [--force]
  dflockctl file status  PATH [--stale S]
  dflockctl file cleanup PATH [--stale S]
  dflockctl lock KEY [--timeout S] [--lease S] [--keepalive S] [--kill-on-lost] -- CMD [ARG...]
  dflockctl stats
  dflockctl ping

Server options (lock, stats, ping): --server HOST:PORT, --auth-token T, --auth-token-file F
Run "dflockctl COMMAND -h" for a command's options; see README.md for exit codes.
`

func (c *cli) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "file":
		return c.file(args[1:])
	case "lock":
		return c.lock(args[1:])
	case "stats":
		return c.stats(args[1:])
	case "ping":
		return c.ping(args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, usageText)
		return exitOK
	default:
		fmt.Fprintf(c.stderr, "dflockctl: unknown command %q\n%s", args[0], usageText)
		return exitUsage
	}
}

// fail prints a one-line error and returns code.
func (c *cli) fail(code int, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "dflockctl: "+format+"\n", a...)
	return code
}
