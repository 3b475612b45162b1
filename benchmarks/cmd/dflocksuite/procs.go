package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dflockd-ng/dflockd/internal/testport"
)

// proc is a server started by the suite.
type proc struct {
	name   string
	addr   string
	pid    int
	cmd    *exec.Cmd
	exited chan struct{}
	done   bool
}

// pinPrefix returns the command that runs a server pinned to the server
// CPUs: this binary's pin subcommand, which masks its thread and execs the
// server (pin_linux.go), so the server keeps the suite's pid for it; the
// server itself when pinning is off.
func (s *runner) pinPrefix(exe string, args []string) (string, []string) {
	if s.serverCPUs == "" {
		return exe, args
	}
	self, err := os.Executable()
	if err != nil {
		return exe, args // no /proc/self/exe: nothing on this host could pin
	}
	return self, append([]string{pinCommand, s.serverCPUs, "--", exe}, args...)
}

// startProc runs a server and waits until addr answers a probe.
func (s *runner) startProc(ctx context.Context, name, exe string, args []string, addr string, probe func(string) error) (*proc, error) {
	p, err := s.spawnProc(name, exe, args, addr)
	if err != nil {
		return nil, err
	}
	if err := s.await(ctx, p, probe); err != nil {
		return nil, err
	}
	return p, nil
}

// spawnProc starts a server pinned to the server CPUs without waiting for
// it: the members of a cluster answer their probes only once a quorum of
// them runs. The caller awaits it; s.stopAll stops it in any case.
func (s *runner) spawnProc(name, exe string, args []string, addr string) (*proc, error) {
	exe, args = s.pinPrefix(exe, args)
	cmd := exec.Command(exe, args...)
	cmd.Stdout = s.logw
	cmd.Stderr = s.logw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, addr: addr, pid: cmd.Process.Pid, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	s.procs = append(s.procs, p)
	return p, nil
}

// await polls probe on p's address until it succeeds, for at most 20 s.
func (s *runner) await(ctx context.Context, p *proc, probe func(string) error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := probe(p.addr)
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited during startup (%v); its output is in %s", p.name, p.cmd.ProcessState, s.logPath)
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("%s on %s did not answer within 20 s: %v", p.name, p.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends p SIGKILL, as a crash would; p.exited closes once it is gone.
func (p *proc) kill() {
	if p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Kill()
}

func (p *proc) stop() {
	if p == nil || p.done {
		return
	}
	p.done = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

func (s *runner) stopAll() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		s.procs[i].stop()
	}
	s.procs = nil
}

// freeAddr picks a free loopback address whose port lies below the
// kernel's ephemeral range, so that no outgoing connection (the load
// generator makes thousands) takes it before the server binds it
// (package testport).
func freeAddr() (string, error) {
	p, err := testport.Free()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// probeLine sends a dflockd ping and wants "ok".
func probeLine(addr string) error {
	return probe(addr, "ping\n_\n_\n", "ok\n")
}

// probeTarget accepts a --target server that answers ping (dflockd-ng,
// the ceiling) or, failing that, stats: dflockd v1.10.0 predates ping and
// answers it "error", while every dflockd release answers stats "ok" and
// its figures.
func probeTarget(addr string) error {
	errPing := probeLine(addr)
	if errPing == nil {
		return nil
	}
	if err := probePrefix(addr, "stats\n_\n_\n", "ok "); err != nil {
		return fmt.Errorf("ping: %v; stats: %w", errPing, err)
	}
	return nil
}

func probeRedis(addr string) error { return probe(addr, "*1\r\n$4\r\nPING\r\n", "+PONG\r\n") }

func probe(addr, req, want string) error {
	got, err := probeReply(addr, req)
	if err == nil && got != want {
		err = fmt.Errorf("probe answered %q, want %q", got, want)
	}
	return err
}

func probePrefix(addr, req, prefix string) error {
	got, err := probeReply(addr, req)
	if err == nil && !strings.HasPrefix(got, prefix) {
		err = fmt.Errorf("probe answered %q, want %q…", got, prefix)
	}
	return err
}

// probeReply sends req and returns the first line of the answer.
func probeReply(addr, req string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// pinThreads pins every thread of a running process (for servers the
// suite cannot start pinned).
func pinThreads(pid int, cpus string) error {
	list, err := parseCPUList(cpus)
	if err != nil {
		return err
	}
	set := cpuSetOf(list)
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// ensureBinary finds bin in PATH, installing the Debian package pkg when
// allowed and missing. The install is bounded to 5 minutes.
func (s *runner) ensureBinary(ctx context.Context, bin, pkg string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	if !s.install {
		return "", fmt.Errorf("%s not installed (apt-get install -y %s; --install=false forbids the suite to)", bin, pkg)
	}
	fmt.Fprintf(s.stderr, "dflocksuite: %s missing: apt-get install -y %s …\n", bin, pkg)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "+pkg)
	cmd.Stdout, cmd.Stderr = s.logw, s.logw
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("apt-get install %s: %v (log in %s)", pkg, err, s.logPath)
	}
	return exec.LookPath(bin)
}
