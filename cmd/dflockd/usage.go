package main

// The --help text, generated from the same tables that LoadConfig parses
// with, so names, variables and defaults shown are the ones in force. The
// flag table of docs/configuration.md mirrors this output.

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

const usageHeader = `Usage: dflockd [flags]
       dflockd version | health [FLAGS] | completion bash|zsh | help [COMMAND]
       dflockd policy hash [TOKEN] | snapshot restore FILE --raft-dir DIR

dflockd-ng: a lock server compatible with dflockd v2.

Commands: version prints the version; health asks a running server whether
it answers (exit 0) or not (exit 1), for a container's HEALTHCHECK;
completion prints a shell completion script for every flag (source <(dflockd
completion bash)); help prints this text, or a command's help; policy hash
prints a token's policy file line; snapshot restore builds a new cluster
member's directory from a backup.

Flags are written -flag or --flag, with the value as --flag=value or --flag
value; booleans as --flag or --flag=false. Durations are whole seconds. A flag
on the command line beats its environment variable, which beats the default; an
empty variable counts as unset. Invalid values and unknown flags stop startup.
`

const usageUnsupportedTitle = "Not supported yet (recognised; any other value stops startup)"

// usageRow is one line of the flag table.
type usageRow struct {
	flag, env, def, usage string
}

// usageWidth is the width --help fits when its output is not a terminal
// (a pipe, docs/configuration.md's flag block): wide enough for a flag's name, its
// variable and its default on one line.
const usageWidth = 100

// writeUsage prints the help text to w, fitted to the terminal's width
// when w is one, else to usageWidth.
func writeUsage(w io.Writer) {
	width := usageWidth
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols >= 40 {
			width = cols
		}
	}
	writeUsageWidth(w, width)
}

// writeUsageWidth prints the help text to w in width columns: each flag's
// name, environment variable and default on a line, then its description,
// indented and wrapped.
func writeUsageWidth(w io.Writer, width int) {
	type group struct {
		title string
		rows  []usageRow
	}
	var groups []group
	defaults := DefaultConfig()
	for _, g := range settingGroups {
		var rows []usageRow
		for _, s := range g.settings {
			rows = append(rows, usageRow{
				flag:  flagColumn(s.flag, s.arg),
				env:   orDash(s.env),
				def:   s.defaultText(&defaults),
				usage: s.usage,
			})
		}
		groups = append(groups, group{g.title, rows})
	}
	var rows []usageRow
	for _, u := range unsupportedFlags {
		rows = append(rows, usageRow{
			flag:  flagColumn(u.flag, u.arg),
			env:   u.env,
			def:   "unset",
			usage: u.feature() + "; accepted only " + u.accepted(),
		})
	}
	if len(rows) > 0 {
		groups = append(groups, group{usageUnsupportedTitle, rows})
	}

	header := usageRow{"FLAG", "ENVIRONMENT", "DEFAULT", ""}
	wf, we, wd := len(header.flag), len(header.env), len(header.def)
	for _, g := range groups {
		for _, r := range g.rows {
			wf, we, wd = max(wf, len(r.flag)), max(we, len(r.env)), max(wd, len(r.def))
		}
	}
	columns := 2 + wf + 2 + we + 2 + wd
	line := func(r usageRow) string {
		if columns > width {
			// Too narrow for the three columns: the variable and the
			// default go under the flag.
			return strings.TrimRight("  "+r.flag+"\n"+usageIndent+r.env+", default "+r.def, " ")
		}
		return strings.TrimRight(fmt.Sprintf("  %-*s  %-*s  %s", wf, r.flag, we, r.env, r.def), " ")
	}

	var b strings.Builder
	b.WriteString(usageHeader)
	b.WriteString("\n" + line(header) + "\n" + usageIndent + "DESCRIPTION\n")
	for _, g := range groups {
		b.WriteString("\n" + wrap(g.title+":", width, "") + "\n")
		for _, r := range g.rows {
			b.WriteString(line(r) + "\n")
			b.WriteString(wrap(r.usage, width, usageIndent) + "\n")
		}
	}
	io.WriteString(w, b.String())
}

// usageIndent is where a flag's description starts.
const usageIndent = "        "

// wrap fills text into lines of at most width columns, each starting
// with indent; a word longer than a line stands alone on its own.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		switch {
		case n == 0:
			b.WriteString(indent)
			n = len(indent)
		case n+1+len(word) > width:
			b.WriteString("\n" + indent)
			n = len(indent)
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

func flagColumn(name, arg string) string {
	col := "--" + name
	if name == flagHelp {
		col = "-h, --help"
	}
	if arg != "" {
		col += " " + arg
	}
	return col
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// defaultText renders the default of s as the operator would write it.
func (s *setting) defaultText(defaults *Config) string {
	if s.def != "" {
		return s.def
	}
	switch p := s.field(defaults).(type) {
	case *string:
		if *p == "" {
			return "unset"
		}
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *time.Duration:
		return strconv.FormatInt(int64(*p/time.Second), 10)
	case *bool:
		return strconv.FormatBool(*p)
	}
	return "-"
}

// feature names the missing feature in the help table.
func (u *unsupportedFlag) feature() string {
	return "not supported"
}

// accepted describes the harmless values of u (see unsupportedFlag).
func (u *unsupportedFlag) accepted() string {
	switch u.off {
	case "0":
		return "empty or 0"
	case "false":
		return "empty or false"
	}
	return "empty"
}
