package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseArgs parses args against fs, accepting flags before, between and
// after positional arguments ("file try PATH --tag x"), in the forms -f,
// --f, -f=v, --f=v and -f v. The standard flag package stops at the first
// positional argument, which would make "PATH --tag x" an error.
//
// "--" ends flag parsing. When maxPos ≥ 0, the positional argument after
// the first maxPos ones starts rest, which is returned untouched; so is
// everything after "--" once maxPos positionals are filled. That is how
// "lock KEY [flags] [--] CMD ARGS…" keeps CMD's own flags away from us.
//
// -help and --help return flag.ErrHelp; so does -h, unless fs has an "h"
// flag (the server host, as redis-cli's -h) and a value follows it: "-h
// HOST" sets the host, "-h" alone or before another option asks for help.
func parseArgs(fs *flag.FlagSet, args []string, maxPos int) (pos, rest []string, err error) {
	full := func() bool { return maxPos >= 0 && len(pos) >= maxPos }
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for j := i + 1; j < len(args); j++ {
				if full() {
					return pos, args[j:], nil
				}
				pos = append(pos, args[j])
			}
			return pos, nil, nil
		}
		if !isOption(a) {
			if full() {
				return pos, args[i:], nil
			}
			pos = append(pos, a)
			continue
		}
		name := strings.TrimPrefix(a[1:], "-")
		name, value, hasValue := strings.Cut(name, "=")
		if name == "help" || (name == "h" && !hasValue && !valueFollows(fs, args[i+1:])) {
			return nil, nil, flag.ErrHelp
		}
		f := fs.Lookup(name)
		if f == nil {
			return nil, nil, fmt.Errorf("unknown flag %s", a)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if !hasValue {
				value = "true"
			}
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		if err := fs.Set(name, value); err != nil {
			return nil, nil, fmt.Errorf("flag %s: %v", a, err)
		}
	}
	return pos, nil, nil
}

// valueFollows says whether -h is followed by its value (the server
// host) rather than used alone for help: fs takes -h HOST, and a word that
// is not an option comes next.
func valueFollows(fs *flag.FlagSet, next []string) bool {
	return fs.Lookup("h") != nil && len(next) > 0 && !isOption(next[0])
}

// isOption says whether a looks like an option ("-x", "--x", "--"); "-"
// alone is a word, as for the shell tools that read stdin from it.
func isOption(a string) bool { return len(a) > 1 && a[0] == '-' }

// seconds is a flag.Value for a non-negative duration given in seconds,
// fractions allowed ("0.5"), matching how the protocols count time.
type seconds struct {
	d   time.Duration
	set bool
}

func (s *seconds) String() string {
	if s == nil {
		return ""
	}
	return strconv.FormatFloat(s.d.Seconds(), 'f', -1, 64)
}

func (s *seconds) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsNaN(f) || f > math.MaxInt64/float64(time.Second) {
		return errors.New("want a non-negative number of seconds")
	}
	s.d, s.set = time.Duration(f*float64(time.Second)), true
	return nil
}

// wholeSeconds is a flag.Value for the server protocol's integer seconds.
type wholeSeconds struct {
	n   int
	min int
}

func (w *wholeSeconds) String() string {
	if w == nil {
		return ""
	}
	return strconv.Itoa(w.n)
}

func (w *wholeSeconds) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < w.min || n > math.MaxInt32 {
		return fmt.Errorf("want a whole number of seconds ≥ %d", w.min)
	}
	w.n = n
	return nil
}
