package readmetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
)

const (
	// blockTimeout bounds one quick start: the cluster's waits a lease
	// out (10 s) after a failover (1–3 s), and the client's compiles a
	// program; a run past this is stuck.
	blockTimeout = 2 * time.Minute
	// reapTimeout bounds the wait for a block's processes to die after
	// SIGKILL, before its directory is removed.
	reapTimeout = 10 * time.Second
)

// quickStarts are the blocks the README and docs/ must mark, wherever
// they are: a marker deleted by mistake would otherwise drop its test
// silently. backup is the newcomer's path of issue #36 (a cluster
// deployed, backed up, and restored into a new one).
var quickStarts = []string{"client", "tls", "http", "cluster", "observatory", "protocol", "policy", "backup"}

// defaultPorts are the ports the quick starts show. Each block runs on
// free ports instead (testport), so a server a developer left running on
// 6388, or a parallel test, neither breaks the run nor is talked to.
var defaultPorts = []string{
	"6388", "6389", // a server's client and HTTP ports
	"6391", "6392", "6393", "6394", "6395", "6396", // cluster members' client ports
	"6491", "6492", "6493", "6494", // their HTTP ports
	"7001", "7002", "7003", "7004", "7005", "7006", // their raft ports
}

// TestReadmeQuickStarts runs each quick start of README.md and of the
// pages of docs/ in bash, in a scratch directory, with dflockd and dflockctl built from this tree
// first in PATH and $DFLOCKD naming the checkout (as the README's setup
// block leaves them), and checks that every command prints the lines
// shown under it. Everything a block starts, servers in the background
// included, runs in the block's process group and is killed with it.
func TestReadmeQuickStarts(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found: the quick starts are bash")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := quickStartFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	named := map[string]string{} // name → the file it is in
	for _, f := range files {
		text, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := Parse(f, text)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			// A name is a subtest's: two files using one would run
			// as NAME and NAME#01, and -run NAME would pick both.
			if other, dup := named[b.Name]; dup {
				t.Fatalf("%s:%d: a second quickstart named %q (the first is in %s)", f, b.Line, b.Name, other)
			}
			named[b.Name] = f
		}
		blocks = append(blocks, bs...)
	}
	for _, n := range quickStarts {
		if named[n] == "" {
			t.Errorf("no <!-- quickstart: %s --> block in %s", n, strings.Join(files, ", "))
		}
	}
	bin := t.TempDir()
	// The README's setup block builds the same way (go build -o bin/
	// ./cmd/...), into the checkout; the test builds into a directory of
	// its own so as not to write into the tree.
	build := exec.Command("go", "build", "-o", bin+string(os.PathSeparator), "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
	for _, b := range blocks {
		t.Run(b.Name, func(t *testing.T) { runBlock(t, b, root, bin) })
	}
}

func runBlock(t *testing.T, b Block, root, bin string) {
	for _, p := range b.Needs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("the %s quick start runs %s, which is not installed (.ci/run installs it on Debian)", b.Name, p)
		}
	}
	// 6388 always moves: a command that names no port (dflockd, dflockctl
	// raw) uses it by default, and is moved by DFLOCKD_PORT, which both
	// read.
	ports := map[string]string{"6388": strconv.Itoa(testport.Port(t))}
	for _, p := range b.Numbers(defaultPorts) {
		if ports[p] == "" {
			ports[p] = strconv.Itoa(testport.Port(t))
		}
	}
	b = b.Replace(ports)

	dir := t.TempDir() // the block's working directory, as the setup's mktemp -d
	for _, f := range b.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Path), []byte(f.Text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	aside := t.TempDir() // the script, its output and TMPDIR, out of the block's sight
	script := filepath.Join(aside, "block.sh")
	if err := os.WriteFile(script, []byte(b.Script()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(aside, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()

	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = dir
	cmd.Env = append(blockEnv(root, bin, aside), "DFLOCKD_PORT="+ports["6388"])
	// One file for stdout and stderr, as a terminal shows them: no pipe
	// for a background server to hold open, and one order for both.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	// Registered after t.TempDir, so it runs before the directories are
	// removed, and on every way out of the test.
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL)
		if err := awaitGroupGone(pgid, reapTimeout); err != nil {
			t.Error(err)
		}
	})
	waitErr := cmd.Wait()
	// The block's own end stops its servers; whatever is left (a block
	// that failed half way) goes now, before its output is read.
	syscall.Kill(-pgid, syscall.SIGKILL)
	if err := awaitGroupGone(pgid, reapTimeout); err != nil {
		t.Error(err)
	}
	if ctx.Err() != nil {
		t.Errorf("%s:%d: the %s quick start ran past %v and was killed", b.File, b.Line, b.Name, blockTimeout)
	}

	output, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	got, ran := SplitOutput(output, len(b.Steps))
	failed := false
	for i, s := range b.Steps {
		switch {
		case i > ran:
			t.Errorf("%s:%d: not run: the block ended before it (bash: %v)\n  $ %s", b.File, s.Line, waitErr, indent(s.Command))
			failed = true
		case !s.Match(got[i]):
			t.Errorf("%s:%d: the %s quick start's command printed other lines than %s shows\n  $ %s\n%s shows:\n%sit printed:\n%s",
				b.File, s.Line, b.Name, b.File, indent(s.Command), b.File, quote(s.Want), quote(got[i]))
			failed = true
		}
	}
	if failed {
		logTails(t, dir)
	}
}

// quickStartFiles lists the Markdown files whose quick starts run,
// relative to root: README.md and every page of docs/, so that a quick
// start moved from one to another keeps running.
func quickStartFiles(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	files := []string{"README.md"}
	for _, d := range docs { // Glob sorts them
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		files = append(files, filepath.ToSlash(rel))
	}
	return files, nil
}

// blockEnv is the test's environment as a newcomer's shell would have it
// after the README's setup block: the binaries under test first in PATH,
// DFLOCKD the checkout. Settings that would change what the commands do
// are dropped (the developer's DFLOCKD_* settings, a GOFLAGS, a BASH_ENV
// sourced by bash), and the Go proxy is off: no quick start may need the
// network, since the module is not on the proxy. TMPDIR is tmp, not the
// block's directory: go ignores a go.mod in the temporary directory
// itself, and the setup's mktemp -d makes the directory below it.
func blockEnv(root, bin, tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "DFLOCKD_"), strings.HasPrefix(k, "DFLOCKCTL_"):
		case k == "PATH", k == "DFLOCKD", k == "TMPDIR", k == "BASH_ENV", k == "ENV", k == "CDPATH":
		case k == "GOFLAGS", k == "GOWORK", k == "GOPROXY", k == "GOTOOLCHAIN":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DFLOCKD="+root,
		"TMPDIR="+tmp,
		"GOPROXY=off",
		"GOTOOLCHAIN=local",
	)
}

// awaitGroupGone waits until no process of group pgid is alive (zombies
// count as gone: they write nothing), so that removing the block's
// directory cannot race a server still writing its log or raft files.
func awaitGroupGone(pgid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		live, err := groupMembers(pgid)
		if err != nil || len(live) == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of the block's group %d still alive %v after SIGKILL", live, pgid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers lists the live (not zombie) processes of group pgid, from
// /proc/PID/stat: "PID (COMM) STATE PPID PGRP …", COMM possibly holding
// spaces and parentheses.
func groupMembers(pgid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	var live []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited since the glob
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(fields[2]); g == pgid {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
			live = append(live, pid)
		}
	}
	return live, nil
}

// logTails prints the end of each log the block's servers wrote, to tell
// a server that did not start from a README that is wrong.
func logTails(t *testing.T, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Logf("%s: %v", filepath.Base(l), err)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		t.Logf("the last lines of %s:\n%s", filepath.Base(l), quote(lines[max(0, len(lines)-15):]))
	}
}

func indent(cmd string) string { return strings.ReplaceAll(cmd, "\n", "\n  ") }

func quote(lines []string) string {
	if len(lines) == 0 {
		return "  (nothing)\n"
	}
	var sb strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&sb, "  %s\n", l)
	}
	return sb.String()
}
