package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// binPath is the dflockctl binary the subprocess tests run. TestMain builds
// it once into a temporary directory (t.TempDir is per test, and building
// per test would dominate the run time).
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dflockctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "dflockctl")
	args := []string{"build", "-o", binPath}
	if raceEnabled {
		args = append(args, "-race")
		// A race-enabled binary sleeps 1 s before a successful exit
		// unless told not to; the children inherit this.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building dflockctl: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := testserver.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// command prepares a dflockctl run with a clean environment: the caller's
// DFLOCKD_* settings must not leak into tests.
func command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binPath, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DFLOCKD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

type result struct {
	stdout, stderr string
	code           int
}

// wait waits for a started command and collects its result.
func wait(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return result{
		stdout: cmd.Stdout.(*testserver.Output).String(),
		stderr: cmd.Stderr.(*testserver.Output).String(),
		code:   exitStatus(cmd.ProcessState),
	}
}

// start starts a dflockctl run with captured output.
func start(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(env, args...)
	cmd.Stdout, cmd.Stderr = new(testserver.Output), new(testserver.Output)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd
}

// run runs dflockctl to completion.
func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return wait(t, start(t, env, args...))
}

// expectCode fails the test unless r exited with code.
func expectCode(t *testing.T, r result, code int, what string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", what, r.code, code, r.stdout, r.stderr)
	}
}

// sh runs a shell script, failing the test if it fails.
func sh(t *testing.T, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
	return string(out)
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testserver.Eventually(t, what, cond)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
