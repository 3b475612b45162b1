package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

const helpUsage = `usage: dflockctl help [COMMAND [SUBCOMMAND]]

Prints the general help, or a command's: "dflockctl help lock" is
"dflockctl lock --help".`

// help prints the general help, or the help of the command named: that
// command run with --help, so each command's help is written once.
func (c *cli) help(g *globals, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, usageText)
		return exitOK
	}
	if slices.Contains([]string{"-h", "-help", "--help"}, args[0]) || (args[0] == "help" && len(args) == 1) {
		fmt.Fprintln(c.stdout, helpUsage)
		return exitOK
	}
	for _, a := range args {
		if isOption(a) {
			return c.fail(exitUsage, "help: unexpected option %s\n%s", a, helpUsage)
		}
	}
	cmd, ok := commands[args[0]]
	if !ok || args[0] == "help" {
		return c.fail(exitUsage, "help: unknown command %q; the commands are %s", args[0], strings.Join(commandNames(false), ", "))
	}
	return cmd.run(c, g, append(slices.Clone(args[1:]), "--help"))
}

// printOptions lists fs's options as flag.PrintDefaults does, but spelt as
// they are typed: --name for a long option, -x for a one-letter one.
func printOptions(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-"
		}
		line := "  " + dashes + f.Name
		if arg != "" {
			line += " " + arg
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if !isZeroDefault(f) {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// isZeroDefault says whether f's default is its type's zero value, which
// goes without saying (as in flag.PrintDefaults).
func isZeroDefault(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var zero flag.Value
	if t.Kind() == reflect.Pointer {
		zero = reflect.New(t.Elem()).Interface().(flag.Value)
	} else {
		zero = reflect.Zero(t).Interface().(flag.Value)
	}
	return f.DefValue == zero.String()
}
