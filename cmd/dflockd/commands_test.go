package main

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// The built binary's commands and usage errors, as an operator meets them:
// what goes to stdout, what to stderr, and the exit status.
func TestUsageCommands(t *testing.T) {
	bin := binary(t)
	tests := []struct {
		args   []string
		code   int
		stdout string // prefix of stdout ("" = empty)
		stderr string // the whole of stderr, when code != 0
	}{
		{args: []string{"version"}, stdout: "dflockd-ng "},
		{args: []string{"--version"}, stdout: "dflockd-ng "},
		{args: []string{"help"}, stdout: "Usage: dflockd [flags]\n"},
		{args: []string{"help", "completion"}, stdout: "usage: dflockd completion bash|zsh\n"},
		{args: []string{"completion", "--help"}, stdout: "usage: dflockd completion bash|zsh\n"},
		{args: []string{"version", "-h"}, stdout: "usage: dflockd version\n"},
		{args: []string{"completion", "bash"}, stdout: "# bash completion for dflockd"},
		{args: []string{"completion", "zsh"}, stdout: "#compdef dflockd\n"},
		{args: []string{"help", "health"}, stdout: "usage: dflockd health [--addr HOST:PORT | --http URL]"},

		{args: []string{"completion"}, code: 2,
			stderr: "dflockd: completion: name a shell, bash or zsh (usage: dflockd completion bash|zsh)\n"},
		{args: []string{"completion", "fish"}, code: 2,
			stderr: "dflockd: completion: unknown shell \"fish\"; want bash or zsh\n"},
		{args: []string{"completion", "bash", "zsh"}, code: 2,
			stderr: "dflockd: completion: unexpected argument \"zsh\" (usage: dflockd completion bash|zsh)\n"},
		{args: []string{"version", "--json"}, code: 2,
			stderr: "dflockd: version: unexpected argument \"--json\" (usage: dflockd version)\n"},
		{args: []string{"help", "serve"}, code: 2,
			stderr: "dflockd: help: unknown command \"serve\"; the commands are version, completion, policy, health, snapshot, help (flags: dflockd --help)\n"},
		{args: []string{"serve"}, code: 2,
			stderr: "dflockd: unknown command \"serve\": dflockd takes flags (see dflockd --help), or a command: version, completion, policy, health, snapshot, help\n"},
		{args: []string{"health", "extra"}, code: 2,
			stderr: "dflockd: health: unexpected argument \"extra\" (see dflockd health --help)\n"},
		{args: []string{"health", "--addr", "h:1", "--http", "h:2"}, code: 2,
			stderr: "dflockd: health: --addr and --http exclude each other (see dflockd health --help)\n"},
		{args: []string{"health", "--timeout", "soon"}, code: 2,
			stderr: "dflockd: health: --timeout \"soon\": want a duration (500ms, 2s) or whole seconds (see dflockd health --help)\n"},
		{args: []string{"verison"}, code: 2, stderr: "dflockd: unknown command \"verison\" (did you mean version?)\n"},
		{args: []string{"--bogus"}, code: 2, stderr: "dflockd: unknown flag --bogus (see dflockd --help)\n"},
		{args: []string{"--defualt-lease-ttl", "5"}, code: 2,
			stderr: "dflockd: unknown flag --defualt-lease-ttl (did you mean --default-lease-ttl?)\n"},
		{args: []string{"--port=0", "version"}, code: 2,
			stderr: "dflockd: unexpected argument \"version\": dflockd takes only flags (a command comes first: dflockd version)\n"},
	}
	for _, tt := range tests {
		cmd := exitingCommand(t, bin, tt.args...)
		cmd.Env = []string{} // no DFLOCKD_* of the caller's
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%q: %v", tt.args, err)
		}
		if code != tt.code {
			t.Errorf("%q: exit %d, want %d; stderr %q", tt.args, code, tt.code, &stderr)
		}
		if tt.code != 0 {
			if stdout.Len() != 0 || stderr.String() != tt.stderr {
				t.Errorf("%q: stdout %q, stderr %q; want nothing and %q", tt.args, &stdout, &stderr, tt.stderr)
			}
			continue
		}
		if stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), tt.stdout) {
			t.Errorf("%q: stdout %.60q, stderr %q; want stdout beginning %q and nothing", tt.args, &stdout, &stderr, tt.stdout)
		}
	}
}

// dflockd version and --version print the same line.
func TestUsageVersionLine(t *testing.T) {
	var a, b, stderr bytes.Buffer
	if run([]string{"version"}, &a, &stderr) != 0 || run([]string{"--version"}, &b, &stderr) != 0 {
		t.Fatalf("version or --version failed: %s", &stderr)
	}
	if a.String() != b.String() || a.String() != versionLine() {
		t.Errorf("version %q, --version %q, want both %q", &a, &b, versionLine())
	}
}
