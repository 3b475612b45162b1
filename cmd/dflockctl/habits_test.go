package main

// The habits operators bring from redis-cli and etcdctl (issue #23): -h
// HOST -p PORT, --endpoints, "help COMMAND", and exit status 2 with the
// reason on stderr for every usage error.

import (
	"errors"
	"flag"
	"io"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

func TestParseArgsDashH(t *testing.T) {
	tests := []struct {
		args     []string
		withHost bool // the flag set takes -h HOST, as the server commands' do
		host     string
		pos      []string
		help     bool
	}{
		{args: []string{"-h", "db1", "ping"}, withHost: true, host: "db1", pos: []string{"ping"}},
		{args: []string{"ping", "-h", "db1"}, withHost: true, host: "db1", pos: []string{"ping"}},
		{args: []string{"-h=db1"}, withHost: true, host: "db1"},
		{args: []string{"-h", "::1"}, withHost: true, host: "::1"},
		{args: []string{"-h"}, withHost: true, help: true},                       // alone: help
		{args: []string{"ping", "-h"}, withHost: true, help: true},               // last: help
		{args: []string{"-h", "--json", "ping"}, withHost: true, help: true},     // before an option: help
		{args: []string{"-h", "--", "ping"}, withHost: true, help: true},         // before --: help
		{args: []string{"--help", "db1"}, withHost: true, help: true},            // --help never takes a value
		{args: []string{"-help", "db1"}, withHost: true, help: true},             //
		{args: []string{"-h", "db1"}, help: true},                                // file commands: no host, -h is help
		{args: []string{"-h", "-"}, withHost: true, host: "-"},                   // "-" is a word
		{args: []string{"-p", "7000", "-h", "db1"}, withHost: true, host: "db1"}, // -p is an ordinary option
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var g globals
		if tt.withHost {
			g.register(fs)
		}
		pos, _, err := parseArgs(fs, tt.args, -1)
		if errors.Is(err, flag.ErrHelp) != tt.help || (err != nil && !tt.help) {
			t.Errorf("%q: err %v, want help %v", tt.args, err, tt.help)
			continue
		}
		if err != nil {
			continue
		}
		if g.host != tt.host || !slices.Equal(pos, tt.pos) {
			t.Errorf("%q: host %q, pos %q; want %q, %q", tt.args, g.host, pos, tt.host, tt.pos)
		}
	}
}

func TestGlobalsServerSpellings(t *testing.T) {
	tests := []struct {
		name      string
		g         globals
		env       map[string]string
		servers   string
		members   bool
		redirects bool // a not-leader reply is followed
		wantErr   string
	}{
		{name: "-h and -p", g: globals{host: "db1", port: "7000"}, servers: "db1:7000"},
		{name: "-h, env port", g: globals{host: "db1"}, env: map[string]string{envPort: "7001"}, servers: "db1:7001"},
		{name: "-p, env host", g: globals{port: "7002"}, env: map[string]string{envHost: "db2"}, servers: "db2:7002"},
		{name: "-p alone", g: globals{port: "7003"}, servers: "127.0.0.1:7003"},
		{name: "-h ipv6", g: globals{host: "::1"}, servers: "[::1]:6388"},
		{name: "-h [ipv6]", g: globals{host: "[::1]", port: "7"}, servers: "[::1]:7"},
		{name: "-h with a port", g: globals{host: "db1:7000"}, wantErr: "give the port with -p"},
		{name: "-p not a port", g: globals{port: "http"}, wantErr: `invalid port "http"`},
		{name: "--endpoints: first that answers", g: globals{endpoints: "a:1, b"}, servers: "a:1,b:6388", members: true},
		{name: "--endpoints --cluster", g: globals{endpoints: "a:1,b:2", cluster: true}, servers: "a:1,b:2", members: true, redirects: true},
		{name: "--server and -h", g: globals{server: "a", host: "b"}, wantErr: "give one of them"},
		{name: "--server and --endpoints", g: globals{server: "a", endpoints: "b"}, wantErr: "give one of them"},
		{name: "--endpoints and -p", g: globals{endpoints: "a", port: "1"}, wantErr: "give one of them"},
	}
	for _, tt := range tests {
		s, err := tt.g.resolve(func(k string) string { return tt.env[k] })
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := strings.Join(s.servers, ","); got != tt.servers {
			t.Errorf("%s: servers %q, want %q", tt.name, got, tt.servers)
		}
		if (len(s.dialer.Members) > 0) != tt.members || (s.dialer.MaxRedirects >= 0) != (tt.redirects || !tt.members) {
			t.Errorf("%s: members %q, MaxRedirects %d; want members %v, redirects %v",
				tt.name, s.dialer.Members, s.dialer.MaxRedirects, tt.members, tt.redirects)
		}
	}
}

// redis-cli's spelling reaches the server it names; so does etcdctl's.
func TestRedisCliAndEtcdctlSpellings(t *testing.T) {
	t.Parallel()
	a, b := testserver.Start(t), testserver.Start(t)
	host, port, _ := net.SplitHostPort(a.Addr())
	// No DFLOCKD_* in the environment: only the options name the server.
	expectOut(t, run(t, nil, "-h", host, "-p", port, "ping"), 0, "ok\n", "-h HOST -p PORT ping")
	expectOut(t, run(t, nil, "ping", "-p", port, "-h", host), 0, "ok\n", "options after the command")
	expectOut(t, run(t, []string{envHost + "=" + host}, "-p", port, "ping"), 0, "ok\n", "-p with the host from the environment")
	expectCode(t, run(t, nil, "-h", host, "-p", "1", "ping"), exitUnavailable, "-p of a closed port")

	// --endpoints: the first that answers serves every key, where
	// --server would shard them.
	dead := "127.0.0.1:1"
	for i := range 8 {
		key := "k" + string(rune('a'+i))
		expectOut(t, run(t, nil, "--endpoints", dead+","+a.Addr()+","+b.Addr(), "counter", "incr", key), 0, "1\n", "--endpoints incr")
	}
	probe := dialServer(t, b)
	for i := range 8 {
		if v, _ := client.GetCounter(probe, "k"+string(rune('a'+i))); v != 0 {
			t.Fatalf("key k%c reached the second endpoint: --endpoints sharded", 'a'+i)
		}
	}
	// Without --cluster a not-leader reply is not followed; with it, it is.
	follower := notLeader(t, b.Addr())
	expectCode(t, run(t, nil, "--endpoints", follower+","+b.Addr(), "counter", "incr", "x"), exitUnavailable, "--endpoints without --cluster")
	expectOut(t, run(t, nil, "--cluster", "--endpoints", follower+","+b.Addr(), "counter", "incr", "x"), 0, "1\n", "--endpoints --cluster")
}

// "dflockctl help COMMAND" is COMMAND's help, with its options spelt
// --name; help and --help exit 0.
func TestHelpCommand(t *testing.T) {
	t.Parallel()
	general := run(t, nil, "help")
	expectCode(t, general, exitOK, "help")
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+`) // -timeout, not --timeout or -h
	for _, name := range commandNames(false) {
		if name == "help" {
			continue
		}
		r := run(t, nil, "help", name)
		expectCode(t, r, exitOK, "help "+name)
		if r.stdout == general.stdout || !strings.Contains(r.stdout, "usage: dflockctl "+name) {
			t.Errorf("help %s printed the general help, or not %s's:\n%s", name, name, r.stdout)
		}
		if m := singleDash.FindString(r.stdout); m != "" {
			t.Errorf("help %s spells an option with one dash: %q", name, m)
		}
		if direct := run(t, nil, name, "--help"); direct.stdout != r.stdout {
			t.Errorf("help %s and %s --help differ", name, name)
		}
	}
	r := run(t, nil, "help", "lock")
	for _, want := range []string{"usage: dflockctl lock KEY", "\n  --timeout seconds\n", "\n  --kill-on-lost\n", "\n  -h HOST\n", "(default 10)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("help lock lacks %q:\n%s", want, r.stdout)
		}
	}
	expectCode(t, run(t, nil, "help", "kv", "get"), exitOK, "help kv get")
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}, {"help", "help"}, {"ping", "-h"}, {"lock", "k", "-h"}} {
		r := run(t, nil, args...)
		if r.code != exitOK || r.stdout == "" || r.stderr != "" {
			t.Errorf("%q: exit %d, stdout %.40q, stderr %q; want 0, help, nothing", args, r.code, r.stdout, r.stderr)
		}
	}
}

// Every usage error exits 2, says why on stderr and prints nothing on
// stdout.
func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		why  string // the start of stderr, after "dflockctl: "
	}{
		{nil, "missing command"},
		{[]string{"-h", "lock"}, "missing command (-h lock names the server host; for lock's help: dflockctl help lock)"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"--bogus", "ping"}, "unknown flag --bogus"},
		{[]string{"ping", "-x"}, "ping: unknown flag -x"},
		{[]string{"-p"}, "flag -p needs a value"},
		{[]string{"--endpoints"}, "flag --endpoints needs a value"},
		{[]string{"ping", "extra"}, `ping: unexpected argument "extra"`},
		{[]string{"kv"}, "kv: missing subcommand"},
		{[]string{"kv", "get"}, "kv get: missing arguments"},
		{[]string{"lock"}, "lock: want a KEY"},
		{[]string{"file"}, "file: missing subcommand"},
		{[]string{"file", "bogus"}, `file: unknown subcommand "bogus"`},
		{[]string{"completion", "fish"}, "completion: want bash or zsh"},
		{[]string{"help", "bogus"}, `help: unknown command "bogus"`},
		{[]string{"help", "--x"}, "help: unexpected option --x"},
		{[]string{"--server", "a", "-h", "b", "ping"}, "ping: --server, --endpoints and -h/-p each name the server"},
		{[]string{"-h", "a:1", "ping"}, `ping: -h takes a host, not "a:1"`},
	}
	for _, tt := range tests {
		r := run(t, nil, tt.args...)
		if r.code != exitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "dflockctl: "+tt.why) {
			t.Errorf("%q: exit %d, stdout %.40q, stderr %q; want %d, nothing, %q",
				tt.args, r.code, r.stdout, r.stderr, exitUsage, "dflockctl: "+tt.why)
		}
	}
}
