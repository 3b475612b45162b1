package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The systemd unit passes systemd-analyze verify (with ExecStart pointed
// at a built binary, since verify checks that it exists).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	unit, err := os.ReadFile("../../dist/systemd/dflockd.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/dflockd", "ExecStart="+binary(t), 1)
	path := filepath.Join(t.TempDir(), "dflockd.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), "dflockd.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The release binaries (scripts/release.sh, run by CI into
// DFLOCKD_RELEASE_DIR with version DFLOCKD_RELEASE_VERSION) are static
// ELF executables of the right architecture, with the version stamped.
func TestReleaseBinaries(t *testing.T) {
	dir, version := os.Getenv("DFLOCKD_RELEASE_DIR"), os.Getenv("DFLOCKD_RELEASE_VERSION")
	if dir == "" || version == "" {
		t.Skip("DFLOCKD_RELEASE_DIR and DFLOCKD_RELEASE_VERSION unset: run scripts/release.sh first (CI does)")
	}
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		for _, cmd := range []string{"dflockd", "dflockctl"} {
			path := filepath.Join(dir, cmd+"-"+version+"-linux-"+arch)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if f.Machine != machine {
				t.Errorf("%s: machine %v, want %v", path, f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s: dynamically linked (has an interpreter)", path)
				}
			}
			f.Close()
			if arch == "amd64" {
				out, err := exitingCommand(t, path, "--version").CombinedOutput()
				if err != nil || !strings.Contains(string(out), version) {
					t.Errorf("%s --version: %v %q, want the version %q", path, err, out, version)
				}
			}
		}
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS-"+version))
	if err != nil || strings.Count(string(sums), "\n") != 4 {
		t.Errorf("SHA256SUMS: %v %q", err, sums)
	}
}
