package main

// The commands of the dflockd binary besides serving: "dflockd version",
// "dflockd help" and "dflockd completion bash|zsh", the habits operators
// bring from other tools, "dflockd policy hash" and "dflockd health" (a
// probe for containers, health.go). A command is the first argument; anything else
// first is a flag, and the server starts.

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/dflockd-ng/dflockd/version"
)

// command is one word that may begin the command line.
type command struct {
	name  string
	usage string // first line of its help; more lines follow for some
	// run gets the arguments after the name and returns the exit status.
	run func(args []string, stdout, stderr io.Writer) int
}

// commands lists the commands, in help order; initialised in init because
// help refers to the table.
var commands []command

func init() {
	commands = []command{
		{name: "version", usage: "usage: dflockd version\n\nPrints the version line and exits (as --version does).\n",
			run: runVersion},
		{name: "completion", usage: completionUsage, run: runCompletion},
		{name: "policy", usage: policyUsage, run: runPolicy},
		{name: "health", usage: healthUsage, run: runHealth},
		{name: "snapshot", usage: snapshotUsage, run: runSnapshot},
		{name: "help", usage: "usage: dflockd help [COMMAND]\n\nPrints the flags (as --help does), or a command's help.\n",
			run: runHelp},
	}
}

// commandNames lists the commands' names, in help order.
func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// runCommand runs the command args begin with and returns its exit status
// and true; false when args begin with a flag (or are empty), so the
// server is to start. A first word that is no command is a usage error.
func runCommand(args []string, stdout, stderr io.Writer) (int, bool) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return 0, false
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		msg := fmt.Sprintf("unknown command %q: dflockd takes flags (see dflockd --help), or a command: %s",
			args[0], strings.Join(commandNames(), ", "))
		if s := suggest(args[0], commandNames()); len(s) > 0 {
			msg = fmt.Sprintf("unknown command %q (did you mean %s?)", args[0], orList(s))
		}
		return usageError(stderr, "%s", msg), true
	}
	if len(args) == 2 && isHelpFlag(args[1]) {
		io.WriteString(stdout, cmd.usage)
		return 0, true
	}
	return cmd.run(args[1:], stdout, stderr), true
}

func isHelpFlag(a string) bool {
	switch a {
	case "-h", "--h", "-help", "--help":
		return true
	}
	return false
}

// usageError reports a bad command line on stderr and returns 2, the
// status of every usage error.
func usageError(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "dflockd: "+format+"\n", a...)
	return 2
}

// versionLine is what version and --version print: the release number
// (package version), the revision and the Go version.
func versionLine() string {
	return fmt.Sprintf("dflockd-ng %s (revision %s, %s)\n", version.String(), version.Revision(), runtime.Version())
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return usageError(stderr, "version: unexpected argument %q (usage: dflockd version)", args[0])
	}
	io.WriteString(stdout, versionLine())
	return 0
}

func runHelp(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		writeUsage(stdout)
		return 0
	case len(args) > 1:
		return usageError(stderr, "help: unexpected argument %q (usage: dflockd help [COMMAND])", args[1])
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		return usageError(stderr, "help: unknown command %q; the commands are %s (flags: dflockd --help)",
			args[0], strings.Join(commandNames(), ", "))
	}
	io.WriteString(stdout, cmd.usage)
	return 0
}
