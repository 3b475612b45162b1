package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

const (
	// startTimeout bounds how long -server may take to accept connections.
	startTimeout = 20 * time.Second
	// stopTimeout bounds the wait after SIGTERM: dflockd drains for up to
	// its --shutdown-timeout, 30 s by default, though with no connection
	// left it stops at once.
	stopTimeout = 35 * time.Second
)

// server is the child process of -server.
type server struct {
	addr   string
	pid    int
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	err    error         // its exit status; read after exited is closed
}

// startServer runs path --host 127.0.0.1 --port <free port> args... and
// returns once it accepts connections. Its output goes to log.
func startServer(path string, args []string, log io.Writer) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close() // the port is free again; the server binds it (a race we accept)

	cmd := exec.Command(path, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive memfuzz
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("-server: %w", err)
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { s.err = cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			_ = c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("-server %s: no connection accepted on %s within %v: %w", path, s.addr, startTimeout, err), s.stop())
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("-server %s exited before accepting connections (%s); see its output above", path, s.status())
		case <-time.After(20 * time.Millisecond): // the port is all there is to wait on
		}
	}
}

// stop ends the server with SIGTERM and reaps it. It fails if the server
// had exited by itself, exits with a failure, or must be killed.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return fmt.Errorf("the server exited during the run (%s); see its output above", s.status())
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("the server failed on SIGTERM: %w", s.err)
		}
		return nil
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("the server did not stop within %v of SIGTERM; killed", stopTimeout)
	}
}

// status describes how the server exited; call after exited is closed.
func (s *server) status() string {
	if s.err == nil {
		return "exit status 0"
	}
	return s.err.Error()
}
