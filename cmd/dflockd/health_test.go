package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// parseHealth's command line and variables: where the probe asks, how
// long, in which profile, with which token.
func TestHealthArgs(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600)
	tests := []struct {
		args []string
		env  map[string]string
		want healthProbe // tls left out: TestHealthProcessTLS
		err  string      // substring; "" = no error
	}{
		{want: healthProbe{addr: "127.0.0.1:6388", timeout: 3 * time.Second, compat: "v2"}},
		{env: map[string]string{"DFLOCKD_HOST": "0.0.0.0", "DFLOCKD_PORT": "7000"},
			want: healthProbe{addr: "127.0.0.1:7000", timeout: 3 * time.Second, compat: "v2"}},
		{env: map[string]string{"DFLOCKD_HOST": "::", "DFLOCKD_PORT": " 7000 "},
			want: healthProbe{addr: "[::1]:7000", timeout: 3 * time.Second, compat: "v2"}},
		{env: map[string]string{"DFLOCKD_HOST": "10.1.2.3", "DFLOCKD_PORT": ""}, // empty counts as unset
			want: healthProbe{addr: "10.1.2.3:6388", timeout: 3 * time.Second, compat: "v2"}},
		{args: []string{"--addr", "db:1", "--timeout", "2"}, env: map[string]string{"DFLOCKD_PORT": "7000"},
			want: healthProbe{addr: "db:1", timeout: 2 * time.Second, compat: "v2"}},
		{args: []string{"-timeout=250ms", "--compat", "RF"},
			want: healthProbe{addr: "127.0.0.1:6388", timeout: 250 * time.Millisecond, compat: "rf"}},
		{env: map[string]string{"DFLOCKD_COMPAT": "v1", "DFLOCKD_AUTH_TOKEN": " tok "},
			want: healthProbe{addr: "127.0.0.1:6388", timeout: 3 * time.Second, compat: "v1", token: "tok"}},
		{args: []string{"--auth-token-file", tokenFile}, env: map[string]string{"DFLOCKD_AUTH_TOKEN": "env"},
			want: healthProbe{addr: "127.0.0.1:6388", timeout: 3 * time.Second, compat: "v2", token: "from-file"}},
		{env: map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": tokenFile},
			want: healthProbe{addr: "127.0.0.1:6388", timeout: 3 * time.Second, compat: "v2", token: "from-file"}},
		{args: []string{"--http", "h:6389"}, env: map[string]string{"DFLOCKD_AUTH_TOKEN": "unused"},
			want: healthProbe{httpURL: "http://h:6389/health", timeout: 3 * time.Second, compat: "v2"}},
		{args: []string{"--http", "http://h:6389/"},
			want: healthProbe{httpURL: "http://h:6389/health", timeout: 3 * time.Second, compat: "v2"}},
		{args: []string{"--http", "https://h:6389/ready"},
			want: healthProbe{httpURL: "https://h:6389/ready", timeout: 3 * time.Second, compat: "v2"}},

		{args: []string{"--addr", "nohost"}, err: `--addr "nohost": want HOST:PORT`},
		{env: map[string]string{"DFLOCKD_PORT": "0"}, err: `DFLOCKD_PORT "0": want a port, 1..65535`},
		{args: []string{"--timeout", "0"}, err: `--timeout "0": must be more than zero`},
		{args: []string{"--compat", "v3"}, err: `--compat "v3": want v2, v1 or rf`},
		{args: []string{"--http", "ftp://h:1"}, err: `--http "ftp://h:1": want http://HOST:PORT[/PATH] or HOST:PORT`},
		{args: []string{"--auth-token-file", filepath.Join(dir, "none")}, err: "cannot read token file"},
		{args: []string{"--port", "1"}, err: "flag provided but not defined: -port"},
	}
	for _, tt := range tests {
		getenv := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
		p, err := parseHealth(tt.args, getenv)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q %v: error %v, want one saying %q", tt.args, tt.env, err, tt.err)
			}
		case err != nil:
			t.Errorf("%q %v: %v", tt.args, tt.env, err)
		case *p != tt.want:
			t.Errorf("%q %v: %+v, want %+v", tt.args, tt.env, *p, tt.want)
		}
	}
}
