package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The earlier release a rolling upgrade starts from, built from the
// clone's own history (docs/upgrades.md, CHANGELOG.md).
const (
	// pinnedRelease is the commit of release 0.1.0: main as issue #36
	// found it. Move it forward (never back) when a release is cut, to
	// the commit of the release before the current one.
	pinnedRelease = "85d3acdc01f45f233b60277dab446604f7c2efc7"
	// pinnedNumber is its release number, stamped into its build (its
	// tree predates package version and says 0.1.0-dev by itself).
	pinnedNumber = "0.1.0"
)

// pinnedBinary builds the server of pinnedRelease: its tree taken with
// git archive (the repository is left as it was: no worktree, no
// checkout) and built outside go.work, without -race whatever the test
// binary has. A clone without that commit (a shallow one) or without git
// fails the test in CI, where a full clone is promised; elsewhere it
// skips, saying why.
func pinnedBinary(t *testing.T) string {
	t.Helper()
	unavailable := func(format string, a ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, a...)
		if os.Getenv("CI") != "" {
			t.Fatalf("%s (CI=%s: a CI run must build the pinned release; clone with full history)", msg, os.Getenv("CI"))
		}
		t.Skipf("%s: the rolling upgrade test needs it (in CI, with CI set, this fails instead)", msg)
	}
	if _, err := exec.LookPath("git"); err != nil {
		unavailable("no git on PATH")
	}
	if out, err := exec.Command("git", "cat-file", "-e", pinnedRelease+"^{commit}").CombinedOutput(); err != nil {
		unavailable("commit %s (release %s) is not in this clone: %v %s", pinnedRelease[:12], pinnedNumber, err, bytes.TrimSpace(out))
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		unavailable("not in a git checkout: %v", err)
	}
	src := t.TempDir()
	// From the top: run in a subdirectory, git archive takes only that.
	archive := exec.Command("git", "archive", "--format=tar", pinnedRelease)
	archive.Dir = strings.TrimSpace(string(top))
	var stderr bytes.Buffer
	archive.Stderr = &stderr
	stdout, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := archive.Start(); err != nil {
		t.Fatal(err)
	}
	xerr := untar(stdout, src)
	_, _ = io.Copy(io.Discard, stdout)
	if err := archive.Wait(); err != nil || xerr != nil {
		t.Fatalf("git archive %s: %v %v %s", pinnedRelease[:12], err, xerr, stderr.String())
	}
	bin := filepath.Join(t.TempDir(), "dflockd-"+pinnedNumber)
	build := exec.Command("go", "build", "-ldflags", "-X main.version="+pinnedNumber, "-o", bin, "./cmd/dflockd")
	build.Dir = src
	// GOWORK=off: its go.mod and go.sum alone (its go.work joins modules
	// the server does not need). GOFLAGS: this process's may carry what
	// suits the current tree only; the module proxy serves what the old
	// go.sum names and the module cache lacks.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod -buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building release %s (%s): %v\n%s", pinnedNumber, pinnedRelease[:12], err, out)
	}
	return bin
}

// untar writes the regular files and directories of a tar stream under
// dir (git archive writes nothing else that the build needs).
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("untar: %q leaves the directory", h.Name)
		}
		path := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}
