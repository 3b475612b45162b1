package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tokenFiles writes two token files for the *-token-file flags' tests:
// file holds "from-file" among blanks, empty only blanks.
func tokenFiles(t *testing.T) (file, empty string) {
	dir := t.TempDir()
	file, empty = filepath.Join(dir, "token"), filepath.Join(dir, "empty")
	if err := os.WriteFile(file, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file, empty
}

// TestConfigAdminToken: --admin-token and --admin-token-file (spec §E.2
// V2C), with their variables: trimmed, one header value, never echoed.
func TestConfigAdminToken(t *testing.T) {
	base := []string{"--raft-dir", "/d", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", "n1=127.0.0.1:7001@127.0.0.1:6388", "--raft-auth-token", strings.Repeat("t", 32)}
	file, empty := tokenFiles(t)
	for _, c := range []struct {
		args []string
		vars map[string]string
		want string
	}{
		{[]string{"--admin-token", " flag "}, nil, "flag"},
		{nil, map[string]string{"DFLOCKD_ADMIN_TOKEN": "env"}, "env"},
		{[]string{"--admin-token", "flag"}, map[string]string{"DFLOCKD_ADMIN_TOKEN": "env"}, "flag"},
		{[]string{"--admin-token-file", file}, nil, "from-file"},
		{nil, map[string]string{"DFLOCKD_ADMIN_TOKEN_FILE": file}, "from-file"},
		{[]string{"--admin-token-file", file}, map[string]string{"DFLOCKD_ADMIN_TOKEN": "env"}, "env"},
		{nil, nil, ""},
	} {
		cfg, _ := mustLoad(t, append(append([]string{}, base...), c.args...), c.vars)
		if cfg.Cluster.AdminToken != c.want {
			t.Errorf("%q %v: admin token %q, want %q", c.args, c.vars, cfg.Cluster.AdminToken, c.want)
		}
		if c.want != "" && redacted(cfg).Cluster.AdminToken != "<redacted>" {
			t.Errorf("the admin token is not redacted")
		}
	}
	// A single node takes one too: it guards the observatory's force
	// release (POST /v1/admin/locks/{key}/release).
	if cfg, _ := mustLoad(t, []string{"--admin-token-file", file}, nil); cfg.Cluster.AdminToken != "from-file" {
		t.Errorf("single node: admin token %q", cfg.Cluster.AdminToken)
	}
	for _, c := range []struct {
		args []string
		vars map[string]string
		want []string
	}{
		{append(base, "--admin-token-file", file+".missing"), nil, []string{"--admin-token-file", "cannot read the token"}},
		{append(base, "--admin-token-file", empty), nil, []string{"--admin-token-file", "is empty"}},
		{append(base, "--admin-token", "hun\x01ter2"), nil, []string{"control character"}},
		{append(base, "--admin-token", "hunter2"+strings.Repeat("x", maxAdminToken)), nil, []string{"over 4096 bytes"}},
	} {
		if msg := wantErr(t, c.args, c.vars, c.want...); strings.Contains(msg, "hunter") {
			t.Errorf("error %q echoes the admin token", msg)
		}
	}
}
