package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --cpu-profile writes a complete profile (a gzip stream that ends, as
// runtime/pprof writes only when the profiler stops) once the server has
// drained after SIGTERM.
func TestCPUProfileWrittenOnDrain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	p := startProc(t, "--cpu-profile", path)
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rd := bufio.NewReader(c)
	for range 200 {
		if _, err := c.Write([]byte("l\nprof\n5\n")); err != nil {
			t.Fatal(err)
		}
		grant, _ := rd.ReadString('\n')
		f := strings.Fields(grant)
		if len(f) < 2 || f[0] != "ok" {
			t.Fatalf("lock: %q", grant)
		}
		if _, err := c.Write([]byte("r\nprof\n" + f[1] + "\n")); err != nil {
			t.Fatal(err)
		}
		if rel, _ := rd.ReadString('\n'); rel != "ok\n" {
			t.Fatalf("release: %q", rel)
		}
	}
	c.Close() // else the drain waits for it, up to --shutdown-timeout
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := exitWithin(t, p.cmd, 30*time.Second, "SIGTERM"); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("profile of %d bytes is not gzip: %v", len(b), err)
	}
	raw, err := io.ReadAll(z)
	if err != nil || len(raw) == 0 {
		t.Fatalf("profile stream: %d bytes, %v; want a complete, non-empty profile", len(raw), err)
	}
}

// A profile path that cannot be created stops the start with exit 2 and
// the reason, before anything listens.
func TestCPUProfileUnwritable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "cpu.pprof")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--port", "0", "--cpu-profile", path}, &stdout, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, &stderr)
	}
	if msg := stderr.String(); !strings.Contains(msg, "cpu profile") || !strings.Contains(msg, "no such file") ||
		strings.Contains(msg, "listening") {
		t.Fatalf("stderr lacks the reason or says listening:\n%s", msg)
	}
}
