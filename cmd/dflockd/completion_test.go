package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// completionCase is a command line being completed, the word under the
// cursor last, and the candidates the script must offer.
type completionCase struct {
	words []string
	want  []string
}

// completions runs the candidate helper of script (bash or zsh) on words.
func completions(t *testing.T, shell, script string, words []string) []string {
	t.Helper()
	var quoted []string
	for _, w := range append([]string{"dflockd"}, words...) {
		quoted = append(quoted, "'"+w+"'")
	}
	n := strconv.Itoa(len(words)) // index of the last word, the command's name at 0
	var prog string
	switch shell {
	case "bash":
		prog = "source " + script + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" + n +
			"; _dflockd; printf '%s\\n' \"${COMPREPLY[@]}\""
	case "zsh":
		// Loaded as compinit would (an autoloaded function), but only the
		// candidate helper is called: it needs no completion system.
		prog = "compdef() { :; }; source " + script + "; words=(" + strings.Join(quoted, " ") + ")" +
			"; CURRENT=" + strconv.Itoa(len(words)+1) +
			"; __dflockd_candidates \"${words[CURRENT]}\" \"${(@)words[2,CURRENT-1]}\"; print -l -- $reply"
	}
	opts := []string{"--norc", "--noprofile"} // bash: no start-up files
	if shell == "zsh" {
		opts = []string{"-f"}
	}
	out, err := exec.Command(shell, append(opts, "-c", prog)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", shell, err, out)
	}
	got := strings.Fields(string(out))
	if shell == "zsh" {
		// zsh's compadd filters by the word typed so far; the helper does not.
		cur := words[len(words)-1]
		got = slices.DeleteFunc(got, func(w string) bool { return !strings.HasPrefix(w, cur) && w != "FILE" && w != "DIR" })
	}
	return got
}

// allFlags is every long flag of the table, as the scripts must offer it.
func allFlags() []string {
	var all []string
	for _, n := range flagNames() {
		all = append(all, "--"+n)
	}
	return all
}

func TestUsageCompletionScripts(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "cert.pem"), nil, 0o600)
	os.Mkdir(filepath.Join(dir, "raft"), 0o700)
	common := []completionCase{
		{[]string{""}, []string{"version", "completion", "policy", "health", "snapshot", "help"}},
		{[]string{"hea"}, []string{"health"}},
		{[]string{"health", "--"}, []string{"--addr", "--http", "--timeout", "--compat", "--auth-token-file", "--tls-cert"}},
		{[]string{"health", "--addr", ""}, nil},
		{[]string{"health", "--addr", "h:1", "--ti"}, []string{"--timeout"}},
		{[]string{"health", "--compat", ""}, []string{"v2", "v1", "rf"}},
		{[]string{"ver"}, []string{"version"}},
		{[]string{"completion", ""}, []string{"bash", "zsh"}},
		{[]string{"help", "c"}, []string{"completion"}},
		{[]string{"version", "--"}, nil},
		{[]string{"--"}, allFlags()}, // every flag of the table
		{[]string{"--defa"}, []string{"--default-lease-ttl"}},
		{[]string{"--port", "1", "--ver"}, []string{"--version"}},
		{[]string{"--debug", "--deb"}, []string{"--debug"}}, // a boolean takes no value
		{[]string{"--port", ""}, nil},                       // any number: nothing to offer
		{[]string{"--log-format", ""}, []string{"text", "json"}},
		{[]string{"-compat", "v"}, []string{"v2", "v1"}}, // one dash counts as two
		{[]string{"--compat=r"}, []string{"--compat=rf"}},
		{[]string{"--http-sse-ping-interval", ""}, nil},
	}
	bashOnly := []completionCase{
		// bash splits at =: "--log-format", "=", "j".
		{[]string{"--log-format", "=", "j"}, []string{"json"}},
		{[]string{"--log-format", "="}, []string{"text", "json"}},
		{[]string{"--debug", "=", ""}, []string{"true", "false"}},
		{[]string{"--tls-cert", dir + "/ce"}, []string{dir + "/cert.pem"}},
		{[]string{"--raft-dir", dir + "/r"}, []string{dir + "/raft"}},
		{[]string{"health", "--tls-cert", dir + "/ce"}, []string{dir + "/cert.pem"}},
	}
	zshOnly := []completionCase{
		{[]string{"--debug=t"}, []string{"--debug=true"}},
		{[]string{"--tls-cert", ""}, []string{"FILE"}}, // _files takes over
		{[]string{"--raft-dir=x"}, []string{"DIR"}},
		{[]string{"health", "--tls-cert", ""}, []string{"FILE"}},
	}
	for _, shell := range []string{"bash", "zsh"} {
		t.Run(shell, func(t *testing.T) {
			var out, stderr bytes.Buffer
			if code := run([]string{"completion", shell}, &out, &stderr); code != 0 || stderr.Len() > 0 {
				t.Fatalf("completion %s: exit %d, stderr %q", shell, code, &stderr)
			}
			for _, n := range flagNames() {
				if !strings.Contains(out.String(), "--"+n+" ") && !strings.Contains(out.String(), "--"+n+"\"") &&
					!strings.Contains(out.String(), "--"+n+")") {
					t.Errorf("the %s script lacks --%s", shell, n)
				}
			}
			if _, err := exec.LookPath(shell); err != nil {
				t.Skipf("%s not installed: the script's candidates are not checked", shell)
			}
			script := filepath.Join(t.TempDir(), "dflockd."+shell)
			os.WriteFile(script, out.Bytes(), 0o600)
			cases := append(slices.Clone(common), bashOnly...)
			if shell == "zsh" {
				cases = append(slices.Clone(common), zshOnly...)
			}
			for _, tc := range cases {
				got := completions(t, shell, script, tc.words)
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s completion of %q = %q, want %q", shell, tc.words, got, tc.want)
				}
			}
		})
	}
}
