package main

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		maxPos   int
		pos      []string
		rest     []string
		tag      string
		force    bool
		stale    time.Duration
		wantErr  bool
		wantHelp bool
	}{
		{name: "flags after positional", args: []string{"p", "--tag", "x", "--force"}, maxPos: -1, pos: []string{"p"}, tag: "x", force: true},
		{name: "flags before", args: []string{"-tag=x", "--stale=1.5", "p"}, maxPos: -1, pos: []string{"p"}, tag: "x", stale: 1500 * time.Millisecond},
		{name: "bool with value", args: []string{"--force=false", "p"}, maxPos: -1, pos: []string{"p"}},
		{name: "dash dash then dashy path", args: []string{"--", "-weird"}, maxPos: -1, pos: []string{"-weird"}},
		{name: "single dash is positional", args: []string{"-"}, maxPos: -1, pos: []string{"-"}},
		{name: "value that looks like --", args: []string{"--tag", "--", "p"}, maxPos: -1, pos: []string{"p"}, tag: "--"},
		{name: "cmd after key", args: []string{"k", "--tag", "t", "ls", "-l", "--tag"}, maxPos: 1, pos: []string{"k"}, rest: []string{"ls", "-l", "--tag"}, tag: "t"},
		{name: "cmd after --", args: []string{"k", "--", "--tag", "x"}, maxPos: 1, pos: []string{"k"}, rest: []string{"--tag", "x"}},
		{name: "key after --", args: []string{"--", "k", "cmd"}, maxPos: 1, pos: []string{"k"}, rest: []string{"cmd"}},
		{name: "unknown flag", args: []string{"--nope"}, maxPos: -1, wantErr: true},
		{name: "missing value", args: []string{"p", "--tag"}, maxPos: -1, wantErr: true},
		{name: "bad seconds", args: []string{"--stale", "-1"}, maxPos: -1, wantErr: true},
		{name: "help", args: []string{"p", "-h"}, maxPos: -1, wantErr: true, wantHelp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			tag := fs.String("tag", "", "")
			force := fs.Bool("force", false, "")
			var stale seconds
			fs.Var(&stale, "stale", "")
			pos, rest, err := parseArgs(fs, tt.args, tt.maxPos)
			if (err != nil) != tt.wantErr || errors.Is(err, flag.ErrHelp) != tt.wantHelp {
				t.Fatalf("err = %v, wantErr %v wantHelp %v", err, tt.wantErr, tt.wantHelp)
			}
			if err != nil {
				return
			}
			if !slices.Equal(pos, tt.pos) || !slices.Equal(rest, tt.rest) {
				t.Errorf("pos %q rest %q, want %q %q", pos, rest, tt.pos, tt.rest)
			}
			if *tag != tt.tag || *force != tt.force || stale.d != tt.stale {
				t.Errorf("tag %q force %v stale %v, want %q %v %v", *tag, *force, stale.d, tt.tag, tt.force, tt.stale)
			}
		})
	}
}

func TestGlobalsResolve(t *testing.T) {
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "tok", " from-file\n")
	envFile := writeFile(t, dir, "envtok", "from-env-file\r\n")
	emptyFile := writeFile(t, dir, "empty", "\n")
	tests := []struct {
		name      string
		flags     globals
		env       map[string]string
		addr, tok string
		members   bool
		wantErr   bool
	}{
		{name: "defaults", addr: "127.0.0.1:6388"},
		{name: "env host and port", env: map[string]string{envHost: "db1", envPort: "7000"}, addr: "db1:7000"},
		{name: "flag beats env", flags: globals{server: "db2:7001"}, env: map[string]string{envHost: "db1", envPort: "7000"}, addr: "db2:7001"},
		{name: "flag host only", flags: globals{server: "db2"}, addr: "db2:6388"},
		{name: "ipv6", flags: globals{server: "::1"}, addr: "[::1]:6388"},
		{name: "ipv6 with port", flags: globals{server: "[::1]:7"}, addr: "[::1]:7"},
		{name: "bad port", env: map[string]string{envPort: "http"}, wantErr: true},
		{name: "token flag first", flags: globals{token: " a ", tokenFile: tokenFile}, env: map[string]string{envAuthToken: "b"}, addr: "127.0.0.1:6388", tok: "a"},
		{name: "token file flag second", flags: globals{tokenFile: tokenFile}, env: map[string]string{envAuthToken: "b"}, addr: "127.0.0.1:6388", tok: "from-file"},
		{name: "env token third", env: map[string]string{envAuthToken: "b", envAuthTokenFile: envFile}, addr: "127.0.0.1:6388", tok: "b"},
		{name: "env token file last", env: map[string]string{envAuthTokenFile: envFile}, addr: "127.0.0.1:6388", tok: "from-env-file"},
		{name: "empty token file", flags: globals{tokenFile: emptyFile}, wantErr: true},
		{name: "missing token file", env: map[string]string{envAuthTokenFile: dir + "/nope"}, wantErr: true},
		{name: "shards", flags: globals{server: "a:1, b"}, addr: "a:1,b:6388"},
		{name: "cluster", flags: globals{server: "a:1,b:2", cluster: true}, addr: "a:1,b:2", members: true},
		{name: "bad port in list", flags: globals{server: "a:1,b:x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.flags.resolve(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if addr := strings.Join(s.servers, ","); addr != tt.addr || s.dialer.AuthToken != tt.tok {
				t.Errorf("got %q %q, want %q %q", addr, s.dialer.AuthToken, tt.addr, tt.tok)
			}
			if (len(s.dialer.Members) > 0) != tt.members {
				t.Errorf("members %q, want cluster mode %v", s.dialer.Members, tt.members)
			}
		})
	}
}

func TestRenewEvery(t *testing.T) {
	tests := []struct {
		lease     int
		keepalive time.Duration
		want      time.Duration
	}{
		{33, 10 * time.Second, 10 * time.Second}, // default lease: keepalive bound
		{15, 10 * time.Second, 5 * time.Second},  // lease/3 is sooner
		{300, 0, 100 * time.Second},              // keepalive disabled
		{1, 10 * time.Second, time.Second / 3},
		{1, time.Millisecond, minRenewEvery},
	}
	for _, tt := range tests {
		if got := renewEvery(tt.lease, tt.keepalive); got != tt.want {
			t.Errorf("renewEvery(%d, %v) = %v, want %v", tt.lease, tt.keepalive, got, tt.want)
		}
	}
}
