// Dflockctl is the command-line companion of dflockd-ng. It has two
// independent halves:
//
//   - "dflockctl file …" manages file-based semaphore lock files (protocol
//     in package filelock) and needs no server;
//   - every other command talks to a dflockd server through package client:
//     "lock" and "elect" hold a lock or a leadership while a command runs,
//     kv, counter, list, signal, listen, watch, barrier and observe reach the
//     other primitives, "raw" sends any request, "interactive" is a
//     prompt with line editing and history, and "cluster add|remove"
//     changes a cluster's membership through its leader's HTTP admin API,
//     "snapshot save|status" backs its state up through it;
//     "acl log|whoami|check" shows the server's policy at work.
//
// Global options go before or after the command's name. Exit codes are
// listed in exitcode.go and README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/version"
)

// cli carries the process's outside world so tests can run subcommands
// in-process, and the prompt can run them on its own terminal.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	// shared, when set (inside the interactive prompt), is the client every
	// server command uses instead of connecting anew; onConn is told of
	// each connection it hands out.
	shared *client.Client
	onConn func(*client.Conn)
}

func main() {
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(c.run(os.Args[1:]))
}

const usageText = `usage: dflockctl [global options] COMMAND [arguments] [options]

Server commands:
  lock KEY [--timeout S] [--lease S] [--limit N] [--keepalive S] [--kill-on-lost] -- CMD [ARG...]
  elect NAME [--timeout S] [--lease S] [--keepalive S] [--kill-on-lost] -- CMD [ARG...]
  kv get|set|del|cas KEY ...       counter get|incr|decr|set KEY ...
  list push|pop|range|len KEY ...  signal CHANNEL PAYLOAD
  listen PATTERN... [--group G]    watch PATTERN...
  observe NAME...                  barrier NAME COUNT [--timeout S]
  ping                             stats
  raw CMD KEY ARG                  interactive (also: no command, on a terminal)

Cluster membership and backups (the leader's HTTP admin API):
  cluster add ID RAFT_ADDR CLIENT_ADDR | cluster remove ID   [--http HOST:PORT,...] [--admin-token T]
  snapshot save FILE [--http HOST:PORT,...] [--admin-token T]   snapshot status FILE

Lock observatory (the server's HTTP API):
  locks [PREFIX] [--kind K,...]    deadlocks                        [--http HOST:PORT,...]
  top [--interval S]               a live full-screen view: hot keys, longest waits, deadlocks
  admin release KEY [--fence F] [--reason TEXT] [--admin-token T]

Policy (the server's HTTP API; the auth token names the identity):
  acl log                          acl whoami                       [--http HOST:PORT,...]
  acl check IDENTITY COMMAND KEY   exit 0 allowed, 5 refused, with the deciding rule

File locks (no server):
  file try|acquire|release|status|cleanup PATH [options]

Other:
  completion bash|zsh              version (or --version)           help

Global options (before or after the command):
  --server HOST:PORT[,HOST:PORT...]  server, or servers keys are sharded over
  -h HOST, -p PORT                   server host and port, as redis-cli's (-h alone: this help)
  --endpoints HOST:PORT[,...]        as etcdctl's: the first that answers serves every key
  --cluster                          the servers are members of one cluster: follow leader redirects
  --stable-ref REF                   present REF on connecting (a cluster's --orphan-ttl re-adoption)
  --auth-token T, --auth-token-file F
  --tls, --tls-ca F, --tls-cert F, --tls-key F, --tls-server-name N, --tls-insecure
  --http HOST:PORT[,HOST:PORT...]    the server's HTTP API, for cluster, snapshot, locks, deadlocks, top, admin
  --json                             machine-readable output

Run "dflockctl help COMMAND" (or "dflockctl COMMAND --help") for a command's
options. Usage errors exit 2; README.md lists the other exit codes.
`

// cmdSpec is one subcommand: run gets the global options as parsed so far
// (those before the command's name) and the arguments after its name.
type cmdSpec struct {
	run         func(c *cli, g *globals, args []string) int
	interactive bool // usable inside the prompt
}

var commands map[string]cmdSpec

func init() {
	commands = map[string]cmdSpec{
		"file":        {run: func(c *cli, _ *globals, a []string) int { return c.file(a) }},
		"lock":        {run: (*cli).lock},
		"elect":       {run: (*cli).elect},
		"kv":          {run: (*cli).kv, interactive: true},
		"counter":     {run: (*cli).counter, interactive: true},
		"list":        {run: (*cli).list, interactive: true},
		"signal":      {run: (*cli).signal, interactive: true},
		"listen":      {run: (*cli).listen, interactive: true},
		"watch":       {run: (*cli).watch, interactive: true},
		"observe":     {run: (*cli).observe, interactive: true},
		"barrier":     {run: (*cli).barrier, interactive: true},
		"ping":        {run: (*cli).ping, interactive: true},
		"stats":       {run: (*cli).stats, interactive: true},
		"raw":         {run: (*cli).raw, interactive: true},
		"cluster":     {run: (*cli).cluster},
		"snapshot":    {run: (*cli).snapshot},
		"locks":       {run: (*cli).locks},
		"deadlocks":   {run: (*cli).deadlocks},
		"top":         {run: (*cli).top},
		"admin":       {run: (*cli).admin},
		"acl":         {run: (*cli).acl},
		"interactive": {run: (*cli).interactive},
		"completion":  {run: (*cli).completion},
		"version":     {run: (*cli).printVersion, interactive: true},
		"help":        {run: (*cli).help, interactive: true},
	}
}

// commandNames lists the commands, sorted, for completion.
func commandNames(interactiveOnly bool) []string {
	var names []string
	for n, cmd := range commands {
		if !interactiveOnly || cmd.interactive {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

func (c *cli) run(args []string) int {
	g := new(globals)
	fs := flag.NewFlagSet("dflockctl", flag.ContinueOnError)
	g.register(fs)
	showVersion := fs.Bool("version", false, "print the version and exit")
	_, rest, err := parseArgs(fs, args, 0)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(c.stdout, usageText)
		return exitOK
	case err != nil:
		return c.fail(exitUsage, "%v", err)
	case *showVersion:
		return c.printVersion(g, nil)
	case len(rest) == 0:
		if isTerminal(c.stdin) {
			return c.interactive(g, nil)
		}
		why := "missing command"
		if _, ok := commands[g.host]; ok {
			// "dflockctl -h lock" reads as redis-cli's: lock is the host.
			why += fmt.Sprintf(" (-h %s names the server host; for %s's help: dflockctl help %s)", g.host, g.host, g.host)
		}
		return c.fail(exitUsage, "%s\n%s", why, strings.TrimSuffix(usageText, "\n"))
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		return c.fail(exitUsage, "unknown command %q\n%s", rest[0], strings.TrimSuffix(usageText, "\n"))
	}
	return cmd.run(c, g, rest[1:])
}

func (c *cli) printVersion(g *globals, args []string) int {
	if _, code, ok := c.parseCommand("version", "usage: dflockctl version [--json]", g, args, 0, 0, nil); !ok {
		return code
	}
	v, rev := version.String(), version.Revision()
	c.emit(g, fmt.Sprintf("dflockctl %s (revision %s, %s)", v, rev, runtime.Version()),
		map[string]string{"version": v, "revision": rev, "go": runtime.Version()})
	return exitOK
}

// fail prints a one-line error and returns code.
func (c *cli) fail(code int, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "dflockctl: "+format+"\n", a...)
	return code
}
