// Package testserver runs the dflockd-ng server binary as a subprocess on
// a free loopback port, for the tests of its clients (package client and
// dflockctl). Tests talk to the real server over TCP, as users do, and do
// not depend on the server's Go APIs.
//
// The binary is built once per test binary, on the first Start, into a
// temporary directory that Main (or Run) removes; a package whose tests
// use Start must call one of them from its TestMain. Start is safe for concurrent use.
package testserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
)

// Timing bounds; generous, since they only matter when something is broken.
const (
	startTimeout = 20 * time.Second // build aside, the server listens within milliseconds
	stopTimeout  = 10 * time.Second // SIGTERM to exit, with --shutdown-timeout 1
	// portAttempts covers the rare case of another process taking the
	// port between our probe and the server's bind.
	portAttempts = 3
)

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Main runs the tests, removes the built server and exits; call it from
// TestMain.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with cleanup of its own: it runs the tests,
// removes the built server and returns the exit code.
func Run(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// Binary returns the path of the built server, building it first if
// needed.
func Binary() (string, error) {
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "dflockd-testserver-")
		if build.err != nil {
			return
		}
		build.bin = filepath.Join(build.dir, "dflockd")
		out, err := exec.Command("go", "build", "-o", build.bin, "github.com/dflockd-ng/dflockd/cmd/dflockd").CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("building dflockd: %v\n%s", err, out)
		}
	})
	return build.bin, build.err
}

// Server is a running server process.
type Server struct {
	addr string
	cmd  *exec.Cmd
	log  *Output
	done chan struct{} // closed when the process has exited
}

// Start starts a server on 127.0.0.1 with args added to the command line
// (after the defaults, so they may override them) and stops it when the
// test ends. The defaults keep teardown fast: --shutdown-timeout 1.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := TryStart(t, args...)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	return s
}

// TryStart is Start that returns the failure instead of failing the test,
// for probing whether the server supports a flag (it refuses to start on
// what it does not support).
func TryStart(t testing.TB, args ...string) (*Server, error) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		s, err := start(bin, args, testport.Port(t))
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("testserver: %v\nserver log:\n%s", err, s.Log())
				}
			})
			return s, nil
		}
		if attempt == portAttempts || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

func start(bin string, args []string, port int) (*Server, error) {
	s := &Server{
		addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		log:  new(Output),
		done: make(chan struct{}),
	}
	argv := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--shutdown-timeout", "1"}, args...)
	s.cmd = exec.Command(bin, argv...)
	s.cmd.Env = cleanEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.cmd.Wait()
		close(s.done)
	}()
	// Ready once it says it listens, not once the port answers: the port
	// was free when freePort looked, but another process's server may
	// have bound it since, and answered for this one, which then failed
	// to bind and exited (the test talked to a stranger, whose stop reset
	// its connections).
	deadline := time.Now().Add(startTimeout)
	for {
		if log := s.Log(); strings.Contains(log, "msg=listening") || strings.Contains(log, `"msg":"listening"`) {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("server exited at start (%v):\n%s", s.cmd.ProcessState, s.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("server not listening on %s after %v:\n%s", s.addr, startTimeout, s.Log())
		}
	}
}

// cleanEnv is the test's environment without DFLOCKD_* settings, which
// would otherwise configure the server behind the test's back.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DFLOCKD_") {
			env = append(env, kv)
		}
	}
	return env
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.addr }

// Env returns DFLOCKD_HOST and DFLOCKD_PORT settings naming the server,
// for a client process's environment.
func (s *Server) Env() []string {
	host, port, _ := net.SplitHostPort(s.addr)
	return []string{"DFLOCKD_HOST=" + host, "DFLOCKD_PORT=" + port}
}

// Log returns what the server has written to stdout and stderr so far.
func (s *Server) Log() string { return s.log.String() }

// Stop sends SIGTERM and waits for the process to exit; it is a no-op once
// the process has exited. A server that ignores SIGTERM is killed and
// reported.
func (s *Server) Stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(stopTimeout):
		s.Kill()
		return fmt.Errorf("server did not exit within %v of SIGTERM", stopTimeout)
	}
}

// Terminate sends SIGTERM and returns at once: the server drains (it
// answers new requests with error_draining) for up to its shutdown timeout.
func (s *Server) Terminate() { s.cmd.Process.Signal(syscall.SIGTERM) }

// Kill kills the process at once, as a crash would, and waits for it.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	<-s.done
}
