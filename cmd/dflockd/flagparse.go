package main

// Reading the command line: the grammar of Go's flag package, which
// dflockd parsed its flags with (so every command line it took is taken
// alike), with messages that spell a flag as the operator typed it and
// suggest the flag meant when one is mistyped.

import (
	"fmt"
	"strings"
)

// scanFlags reads the flags at the head of args as Go's flag package
// does: -name or --name; the value as -name=value or as the next
// argument; a boolean flag bare (true) or only with = (--debug=false);
// scanning stops at the first argument that is not a flag ("-" is not
// one) and after "--", which is dropped. known says whether a name is a
// flag and whether it is boolean. values maps each flag given to its text
// (the last one wins); rest is what follows the flags.
func scanFlags(args []string, known func(name string) (isBool, ok bool)) (values map[string]string, rest []string, err error) {
	values = make(map[string]string)
	for len(args) > 0 {
		a := args[0]
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if a == "--" {
			args = args[1:]
			break
		}
		args = args[1:]
		name := strings.TrimPrefix(a[1:], "-")
		if name == "" || name[0] == '-' || name[0] == '=' {
			return nil, nil, fmt.Errorf("bad flag syntax: %s (see dflockd --help)", a)
		}
		typed := a // as written, up to any =
		value, hasValue := "", false
		if i := strings.IndexByte(name, '='); i > 0 {
			value, hasValue = name[i+1:], true
			name = name[:i]
			typed = a[:len(a)-len(value)-1]
		}
		isBool, ok := known(name)
		switch {
		case !ok:
			return nil, nil, unknownFlagError(typed, name)
		case isBool && !hasValue:
			value = "true"
		case !hasValue:
			if len(args) == 0 {
				return nil, nil, fmt.Errorf("flag needs an argument: %s (see dflockd --help)", typed)
			}
			value, args = args[0], args[1:]
		}
		values[name] = value
	}
	return values, args, nil
}

// unknownFlagError reports the flag as typed, with the flags it is likely
// a slip for, or else a pointer to the list of them.
func unknownFlagError(typed, name string) error {
	var dashed []string
	for _, s := range suggest(name, flagNames()) {
		dashed = append(dashed, "--"+s)
	}
	if len(dashed) == 0 {
		return fmt.Errorf("unknown flag %s (see dflockd --help)", typed)
	}
	return fmt.Errorf("unknown flag %s (did you mean %s?)", typed, orList(dashed))
}

// Bounds of a suggestion: what a slip of the fingers produces, not what
// merely resembles a name.
const (
	// maxSlips is the most single-character edits (insert, delete,
	// substitute, swap two neighbours) a suggestion may be away: two
	// catches a doubled slip ("--defualt-lease-tll") and little else.
	maxSlips = 2
	// minPrefix is the shortest typed name completed as a prefix: fewer
	// letters match half the table.
	minPrefix = 3
	// maxSuggestions keeps the message one readable line.
	maxSuggestions = 3
)

// suggest returns the names, in table order, that name is most likely a
// slip for: those the fewest edits away, if that is at most maxSlips and
// at most a third of name's length (so "--x" suggests nothing); or else
// those that name begins (--max-conn: --max-connections,
// --max-connections-per-ip). Case is ignored.
func suggest(name string, names []string) []string {
	typed := strings.ToLower(name)
	best := min(maxSlips, len(typed)/3)
	var out []string
	for _, n := range names {
		d := slips(typed, n)
		switch {
		case d < best:
			best, out = d, []string{n}
		case d == best:
			out = append(out, n)
		}
	}
	if len(out) == 0 && len(typed) >= minPrefix {
		for _, n := range names {
			if strings.HasPrefix(n, typed) {
				out = append(out, n)
			}
		}
	}
	if len(out) > maxSuggestions {
		out = out[:maxSuggestions]
	}
	return out
}

// slips is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and swaps of adjacent
// characters that turn a into b, each substring edited once.
func slips(a, b string) int {
	// Three rows of the dynamic programme: i-2, i-1 and i.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
