package main

import (
	"flag"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// An unknown flag is named as it was typed, with the flag meant when it is
// a near miss; each message is the whole error LoadConfig returns.
func TestFlagUnknownAsTyped(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag --bogus (see dflockd --help)"},
		{[]string{"-bogus"}, "unknown flag -bogus (see dflockd --help)"},
		{[]string{"--bogus=1"}, "unknown flag --bogus (see dflockd --help)"},
		{[]string{"--defualt-lease-ttl", "5"}, "unknown flag --defualt-lease-ttl (did you mean --default-lease-ttl?)"},
		{[]string{"--defualt-lease-ttl=5"}, "unknown flag --defualt-lease-ttl (did you mean --default-lease-ttl?)"},
		{[]string{"-defualt-lease-ttl=5"}, "unknown flag -defualt-lease-ttl (did you mean --default-lease-ttl?)"},
		{[]string{"--port=1", "--prot", "2"}, "unknown flag --prot (did you mean --port?)"},
		{[]string{"--PORT=1"}, "unknown flag --PORT (did you mean --port?)"},
		{[]string{"--max-conn=5"}, "unknown flag --max-conn (did you mean --max-connections or --max-connections-per-ip?)"},
		{[]string{"--auth-tokn", "x"}, "unknown flag --auth-tokn (did you mean --auth-token?)"},
		{[]string{"--versoin"}, "unknown flag --versoin (did you mean --version?)"},
		{[]string{"--port"}, "flag needs an argument: --port (see dflockd --help)"},
		{[]string{"-port"}, "flag needs an argument: -port (see dflockd --help)"},
		{[]string{"---port=1"}, "bad flag syntax: ---port=1 (see dflockd --help)"},
	}
	for _, tt := range tests {
		_, _, err := load(t, tt.args, nil)
		if err == nil || err.Error() != tt.want {
			t.Errorf("LoadConfig(%q) error = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestFlagSuggest(t *testing.T) {
	names := flagNames()
	tests := []struct {
		typed string
		want  []string
	}{
		{"defualt-lease-ttl", []string{"default-lease-ttl"}}, // two letters swapped: one slip
		{"default-lease-tll", []string{"default-lease-ttl"}},
		{"defualt-lease-tll", []string{"default-lease-ttl"}}, // two slips
		{"default-lease", []string{"default-lease-ttl"}},     // a prefix
		{"read-timout", []string{"read-timeout"}},
		{"hots", []string{"host"}},
		{"prot", []string{"port"}},
		{"Debug", []string{"debug"}},
		{"max-conn", []string{"max-connections", "max-connections-per-ip"}},
		{"tls-certificate", nil},
		{"bogus", nil},
		{"x", nil},  // too short to guess
		{"po", nil}, // two letters: neither a slip nor a prefix worth naming
		{"verbose", nil},
	}
	for _, tt := range tests {
		if got := suggest(tt.typed, names); !slices.Equal(got, tt.want) {
			t.Errorf("suggest(%q) = %q, want %q", tt.typed, got, tt.want)
		}
	}
	// Every flag, mistyped by one swap, leads back to itself.
	for _, n := range names {
		if len(n) < 4 {
			continue
		}
		typo := n[:1] + n[2:3] + n[1:2] + n[3:]
		if typo == n {
			continue
		}
		if got := suggest(typo, names); !slices.Contains(got, n) {
			t.Errorf("suggest(%q) = %q, want it to include %q", typo, got, n)
		}
	}
}

func TestFlagSlips(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"port", "port", 0},
		{"prot", "port", 1}, {"pot", "port", 1}, {"porrt", "port", 1}, {"pert", "port", 1},
		{"defualt", "default", 1}, {"ca", "abc", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := slips(tt.a, tt.b); got != tt.want {
			t.Errorf("slips(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := slips(tt.b, tt.a); got != tt.want {
			t.Errorf("slips(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

// scanFlags reads a command line as Go's flag package, which dflockd used,
// read it: the same values, the same arguments left, an error on the same
// lines. The flag package is the reference model; command lines are drawn
// at random from words that exercise its grammar.
func TestFlagScanLikeGoFlag(t *testing.T) {
	words := []string{
		"--port", "-port", "--port=1", "-port=0x10", "--debug", "-debug", "--debug=false", "--debug=x",
		"--host=", "--host", "--tls-cert", "-h", "--help=false", "--bogus", "-bogus=1",
		"1", "x", "false", "-", "--", "---", "-=x", "--=", "--port=a=b", "",
	}
	known := func(name string) (bool, bool) {
		switch name {
		case "debug", "h", "help":
			return true, true
		case "port", "host", "tls-cert":
			return false, true
		}
		return false, false
	}
	rng := rand.New(rand.NewPCG(23, 4))
	for range 20000 {
		args := make([]string, rng.IntN(6))
		for i := range args {
			args[i] = words[rng.IntN(len(words))]
		}
		fs := flag.NewFlagSet("dflockd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		ref := make(map[string]string)
		for _, n := range []string{"debug", "h", "help", "port", "host", "tls-cert"} {
			isBool, _ := known(n)
			fs.Var(&recorder{name: n, isBool: isBool, into: ref}, n, "")
		}
		refErr := fs.Parse(args)

		values, rest, err := scanFlags(args, known)
		if (err != nil) != (refErr != nil) {
			t.Fatalf("%q: scanFlags error %v, flag package's %v", args, err, refErr)
		}
		if err != nil {
			continue
		}
		if !maps.Equal(values, ref) || !slices.Equal(rest, fs.Args()) {
			t.Fatalf("%q: scanFlags = %q, rest %q; flag package: %q, rest %q", args, values, rest, ref, fs.Args())
		}
	}
}

// recorder is a flag.Value that records the text it is set to.
type recorder struct {
	name   string
	isBool bool
	into   map[string]string
}

func (r *recorder) String() string     { return "" }
func (r *recorder) Set(s string) error { r.into[r.name] = s; return nil }
func (r *recorder) IsBoolFlag() bool   { return r.isBool }
