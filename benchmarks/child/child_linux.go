package child

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
)

// startup bounds how long a child server may take to report its address
// or to start answering.
const startup = 10 * time.Second

// Process is a running child server.
type Process struct {
	Name string
	Addr string // host:port it serves on
	PID  int
	cmd  *exec.Cmd
	done bool
}

// Start runs exe with args, a server that prints "listening <host:port>" as
// its first stdout line, and returns once it has. The child's stderr goes to
// stderr.
func Start(ctx context.Context, name, exe string, args []string, stderr io.Writer) (*Process, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child: start %s: %w", name, err)
	}
	p := &Process{Name: name, PID: cmd.Process.Pid, cmd: cmd}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(s)
		_, _ = io.Copy(io.Discard, out) // keep the pipe drained
	}()
	select {
	case s := <-line:
		if a, ok := strings.CutPrefix(s, "listening "); ok {
			p.Addr = a
			return p, nil
		}
		err = fmt.Errorf("unexpected first line %q", s)
	case <-time.After(startup):
		err = errors.New("did not report its address in time")
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.Stop()
	return nil, fmt.Errorf("child: %s: %w", name, err)
}

// Stop ends the process politely (SIGTERM), forcibly after 5 s, and reaps
// it.
func (p *Process) Stop() {
	if p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
}

// StartRedis starts a throw-away redis-server (binary bin, looked up in
// PATH) on a free loopback port with persistence off, and waits until it
// answers PING.
func StartRedis(ctx context.Context, bin string, stderr io.Writer) (*Process, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("child: %w (apt-get install redis-server)", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--bind", "127.0.0.1", "--port", fmt.Sprint(port),
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child: start redis-server: %w", err)
	}
	p := &Process{Name: "redis", Addr: net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), PID: cmd.Process.Pid, cmd: cmd}
	deadline := time.Now().Add(startup)
	for {
		err := pingRedis(p.Addr)
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, fmt.Errorf("child: redis-server on %s did not answer PING within %v: %w", p.Addr, startup, err)
		}
		time.Sleep(20 * time.Millisecond) // nothing to wait on but the port itself
	}
}

// freePort picks a free loopback port below the kernel's ephemeral range,
// which no outgoing connection can take before the child binds it
// (package testport).
func freePort() (int, error) { return testport.Free() }

func pingRedis(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return err
	}
	s, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if s != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", s)
	}
	return nil
}
