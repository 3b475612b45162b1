package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// Tests of the built binary as a process: what only a separate process can
// show, such as its resident memory.

// build is one build of the server for the test run.
type build struct {
	once sync.Once
	path string
	err  error
}

var (
	built      build // the real binary
	faultBuilt build // -tags faultinject: SIGUSR2 stops the gnet loops
)

// exitingCommand is a command that should end by itself (a usage error,
// --version): bounded, so that one which serves instead is killed after
// 30 s and fails its test rather than hanging the package until its
// timeout.
func exitingCommand(t *testing.T, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return exec.CommandContext(ctx, name, args...)
}

// binary builds the server once per test run. DFLOCKD_TEST_BINARY names
// another build to run instead (say, an older one to compare with).
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DFLOCKD_TEST_BINARY"); p != "" {
		return p
	}
	return built.get(t)
}

// faultBinary builds the server with fault injection (faultinject.go).
func faultBinary(t *testing.T) string {
	t.Helper()
	return faultBuilt.get(t, "-tags", "faultinject")
}

func (b *build) get(t *testing.T, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "dflockd-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "dflockd")
		args := append(append([]string{"build"}, flags...), "-o", b.path, ".")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// serverProc is a running server binary.
type serverProc struct {
	cmd  *exec.Cmd
	addr string
	log  testserver.Output
}

// startProc runs the binary on a free loopback port with extra flags.
func startProc(t *testing.T, flags ...string) *serverProc {
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p := &serverProc{addr: addr}
	p.cmd = exec.Command(binary(t), append([]string{"--host", "127.0.0.1", "--port", port}, flags...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", p.log.String())
		}
	})
	// Ready once it says it listens, not once the port answers: another
	// process may have bound the port since it was free, and would
	// answer for this server, which then failed to bind.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.log.String(), "listening"); {
		if time.Now().After(deadline) {
			t.Fatalf("server did not say listening on %s:\n%s", addr, p.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// exitWithin waits up to d for a started server to exit and returns what
// Wait returned; it fails the test if the server is still running then,
// with after saying what should have ended it.
func exitWithin(t *testing.T, cmd *exec.Cmd, d time.Duration, after string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("the server did not exit within %v after %s", d, after)
		return nil
	}
}

// rss returns the server's resident set size in bytes.
func (p *serverProc) rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// pingP99 is the 99th percentile of n sequential ping round trips.
func pingP99(t *testing.T, c net.Conn, rd *bufio.Reader, n int) time.Duration {
	t.Helper()
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		if _, err := c.Write([]byte("ping\n_\n_\n")); err != nil {
			t.Fatal(err)
		}
		if l, err := rd.ReadString('\n'); err != nil || l != "ok\n" {
			t.Fatalf("ping: %q %v", l, err)
		}
		lat[i] = time.Since(start)
	}
	slices.Sort(lat)
	return lat[n*99/100]
}

// probe measures ping latency as a well-behaved client sees it: the median
// of several batches' p99, which a single scheduling hiccup cannot move.
func probe(t *testing.T, c net.Conn, rd *bufio.Reader) time.Duration {
	t.Helper()
	var p99s []time.Duration
	for range 5 {
		p99s = append(p99s, pingP99(t, c, rd, 400))
	}
	slices.Sort(p99s)
	return p99s[len(p99s)/2]
}
