package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// terminal drives a dflockctl running on a pseudo-terminal.
type terminal struct {
	t    *testing.T
	f    *os.File
	out  *testserver.Output
	seen int // bytes of out already matched
}

func (tm *terminal) send(s string) {
	tm.t.Helper()
	if _, err := tm.f.WriteString(s); err != nil {
		tm.t.Fatal(err)
	}
}

// expect waits for want in the output after what earlier expects matched.
func (tm *terminal) expect(want string) {
	tm.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := tm.out.String()
		if i := strings.Index(out[tm.seen:], want); i >= 0 {
			tm.seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("terminal output lacks %q after:\n%q", want, out[tm.seen:])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInteractivePrompt runs the prompt on a pseudo-terminal, as a person
// would: commands, raw requests, pushes printed while it waits, history
// (up arrow, and the file), Tab completion, quit.
func TestInteractivePrompt(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	hist := filepath.Join(t.TempDir(), "history")
	cmd := command(append(srv.Env(), "DFLOCKCTL_HISTFILE="+hist, "TERM=xterm")) // no command: the prompt, stdin being a terminal
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tm := &terminal{t: t, f: f, out: new(testserver.Output)}
	go io.Copy(tm.out, f)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	prompt := "dflockctl " + srv.Addr() + "> "
	tm.expect(prompt)
	tm.send("kv set greeting 'hello world'\r")
	tm.expect("ok")
	tm.send("kv get greeting\r")
	tm.expect("hello world")
	tm.send("incr visits 5\r") // not a dflockctl command: a raw request
	tm.expect("ok 5")
	tm.send("\x1b[A\r") // up arrow: the previous line again
	tm.expect("ok 10")
	tm.send("cou\t") // Tab completes the command's name
	tm.expect("counter ")
	tm.send("get visits\r")
	tm.expect("10")
	tm.send("kv get nothing\r")
	tm.expect("(exit 3)")
	tm.send("lock k -- true\r")
	tm.expect("(error) lock is not available in the prompt")

	// A subscription's pushes appear while the prompt waits for input.
	tm.send("listen news\r")
	tm.expect("subscribed")
	probe := dialServer(t, srv)
	if n, err := client.Emit(probe, "news", "extra extra"); err != nil || n != 1 {
		t.Fatalf("Emit = %d, %v", n, err)
	}
	tm.expect("sig news extra extra")
	tm.send("auth secret-token\r")
	tm.expect("error")
	tm.send("quit\r")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("prompt exited with %v; output:\n%s", err, tm.out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("prompt did not exit on quit")
	}

	b, _ := os.ReadFile(hist)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{"kv set greeting 'hello world'", "kv get greeting", "incr visits 5", "counter get visits"}
	for _, w := range want {
		if !slices.Contains(lines, w) {
			t.Fatalf("history file %q lacks %q", lines, w)
		}
	}
	if strings.Contains(string(b), "secret-token") {
		t.Fatal("the auth line reached the history file")
	}

	// The next session starts with that history: up arrow recalls the last
	// line of the previous one.
	cmd = command(append(srv.Env(), "DFLOCKCTL_HISTFILE="+hist, "TERM=xterm"), "interactive")
	f2, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	tm = &terminal{t: t, f: f2, out: new(testserver.Output)}
	go io.Copy(tm.out, f2)
	tm.expect(prompt)
	tm.send("\x1b[A")
	tm.expect("quit")
	tm.send("\x03") // Ctrl-C leaves the prompt too
	if err := cmd.Wait(); err != nil {
		t.Fatalf("prompt exited with %v after Ctrl-C", err)
	}
}

// TestInteractiveFromPipe: without a terminal the prompt reads lines from
// stdin and prompts nothing.
func TestInteractiveFromPipe(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	cmd := command(srv.Env(), "interactive")
	cmd.Stdin = strings.NewReader("counter incr n\ncounter incr n 2\nkget none\n\"unterminated\nping\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "1\n3\nnil\n(error) unterminated \"\nok\n"
	if string(out) != want {
		t.Fatalf("output %q, want %q", out, want)
	}
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	bash := run(t, nil, "completion", "bash")
	expectCode(t, bash, 0, "completion bash")
	cases := []struct {
		words []string // the command line, the word being completed last
		want  []string
	}{
		{[]string{"co"}, []string{"completion", "counter"}},
		{[]string{"kv", ""}, []string{"get", "set", "del", "cas"}},
		{[]string{"--server", "h:1", "li"}, []string{"list", "listen"}},
		{[]string{"list", "pop", "q", "--w"}, []string{"--wait"}},
		{[]string{"--js"}, []string{"--json"}},
		{[]string{"kv", "get", ""}, nil},
		{[]string{"-h", "db1", "-p", "7000", "pi"}, []string{"ping"}}, // redis-cli's options take a value
		{[]string{"--endp"}, []string{"--endpoints"}},
	}
	script := filepath.Join(t.TempDir(), "dflockctl.bash")
	os.WriteFile(script, []byte(bash.stdout), 0o600)
	for _, tc := range cases {
		words := append([]string{"dflockctl"}, tc.words...)
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + script + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "; _dflockctl; printf '%s\\n' \"${COMPREPLY[@]}\""
		out, err := exec.Command("bash", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		if got := strings.Fields(string(out)); !slices.Equal(got, tc.want) {
			t.Errorf("bash completion of %q = %q, want %q", tc.words, got, tc.want)
		}
	}

	zsh := run(t, nil, "completion", "zsh")
	expectCode(t, zsh, 0, "completion zsh")
	if _, err := exec.LookPath("zsh"); err != nil {
		t.Skip("zsh not installed: the zsh script's candidates are not checked")
	}
	zscript := filepath.Join(t.TempDir(), "_dflockctl")
	os.WriteFile(zscript, []byte(zsh.stdout), 0o600)
	for _, tc := range cases {
		words := append([]string{"dflockctl"}, tc.words...)
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		// Load the script as compinit would (an autoloaded function) but
		// call only the candidate helper, which needs no completion system.
		prog := "compdef() { :; }; source " + zscript + "; words=(" + strings.Join(quoted, " ") + ")" +
			"; CURRENT=" + strconv.Itoa(len(words)) + "; __dflockctl_candidates \"${words[CURRENT]}\" \"${words[CURRENT-1]}\" \"${(@)words[2,CURRENT-1]}\"; print -l -- $reply"
		out, err := exec.Command("zsh", "-f", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("zsh: %v\n%s", err, out)
		}
		var got []string
		for _, w := range strings.Fields(string(out)) {
			if strings.HasPrefix(w, wordAt(tc.words)) {
				got = append(got, w) // zsh's compadd filters by prefix itself
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("zsh completion of %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}

func wordAt(words []string) string { return words[len(words)-1] }
