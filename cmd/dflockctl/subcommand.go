package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
)

// subcommand splits "kv get …" style arguments into the subcommand, which
// must be one of subs, and the rest; global options before the subcommand
// are parsed into g. It prints usage for -h and for a missing or unknown
// subcommand.
func (c *cli) subcommand(name, usage string, g *globals, args []string, subs ...string) (string, []string, int, bool) {
	fs := flag.NewFlagSet("dflockctl "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	_, args, err := parseArgs(fs, args, 0)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprintln(c.stdout, usage)
		return "", nil, exitOK, false
	case err != nil:
		return "", nil, c.fail(exitUsage, "%s: %v", name, err), false
	case len(args) == 0:
		return "", nil, c.fail(exitUsage, "%s: missing subcommand\n%s", name, usage), false
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprintln(c.stdout, usage)
		return "", nil, exitOK, false
	case !slices.Contains(subs, args[0]):
		return "", nil, c.fail(exitUsage, "%s: unknown subcommand %q\n%s", name, args[0], usage), false
	}
	return args[0], args[1:], 0, true
}

// keyValue is the JSON form of a value read or written.
type keyValue struct {
	Key   string  `json:"key"`
	Value *string `json:"value"` // null when absent
}
