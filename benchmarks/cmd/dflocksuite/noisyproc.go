package main

// The noisy tenant as a process of its own (the hidden noisy-tenant
// subcommand), pinned to --noisy-cpus: its CPU time is then its own to
// measure, and on a host with a CPU to spare it does not share the quiet
// tenant's load generator's.
//
//	dflocksuite noisy-tenant --addr A --token T --locks N --waiters N --keys N --conns N --dials N [--dial-addr A]
//
// It sets the tenant up, prints "ready", floods until its standard input
// closes, then prints the counts and the failure, if any, as one JSON
// line.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/noisy"
	"github.com/dflockd-ng/dflockd/benchmarks/procstat"
)

const noisyCommand = "noisy-tenant"

// noisyReport is the subcommand's last line.
type noisyReport struct {
	Counts noisy.Counts `json:"counts"`
	Error  string       `json:"error,omitempty"`
}

func noisyMain(args []string, stdin io.Reader, stdout io.Writer) int {
	fs := flag.NewFlagSet(noisyCommand, flag.ContinueOnError)
	var cfg noisy.Config
	fs.StringVar(&cfg.Addr, "addr", "", "server")
	fs.StringVar(&cfg.Token, "token", "", "the noisy identity's token")
	fs.IntVar(&cfg.Quota.Locks, "locks", 0, "its locks quota")
	fs.IntVar(&cfg.Quota.Waiters, "waiters", 0, "its waiters quota")
	fs.IntVar(&cfg.Quota.Keys, "keys", 0, "its keys quota")
	fs.IntVar(&cfg.Quota.Conns, "conns", 0, "its conns quota")
	fs.IntVar(&cfg.DialRate, "dials", 0, "connections a second beyond the conns quota")
	fs.StringVar(&cfg.DialAddr, "dial-addr", "", "where those connections go (default --addr; a dial-sink's address for the control)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ten, err := noisy.Start(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin) // until the suite closes it
	c, err := ten.Stop()
	rep := noisyReport{Counts: c}
	if err != nil {
		rep.Error = err.Error()
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintf(stdout, "%s\n", b)
	if err != nil {
		return 1
	}
	return 0
}

// noisyProc is a running noisy-tenant process.
type noisyProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	began time.Time
	cpu0  time.Duration
	// Cores is the process's CPU time over its run ÷ its run, set by Stop.
	Cores float64
}

// startNoisyProc runs the noisy tenant as a process pinned to cpus (none:
// unpinned) and waits until it is set up.
func (s *runner) startNoisyProc(cfg noisy.Config, cpus string) (*noisyProc, error) {
	q := cfg.Quota
	args := []string{noisyCommand, "--addr", cfg.Addr, "--token", cfg.Token, "--locks", strconv.Itoa(q.Locks),
		"--waiters", strconv.Itoa(q.Waiters), "--keys", strconv.Itoa(q.Keys), "--conns", strconv.Itoa(q.Conns),
		"--dials", strconv.Itoa(cfg.DialRate)}
	if cfg.DialAddr != "" {
		args = append(args, "--dial-addr", cfg.DialAddr)
	}
	cmd, stdin, stdout, err := s.startSelf(cpus, args...)
	if err != nil {
		return nil, fmt.Errorf("start the noisy tenant: %w", err)
	}
	np := &noisyProc{cmd: cmd, stdin: stdin, out: stdout, began: time.Now()}
	ready := make(chan error, 1)
	go func() {
		line, err := np.out.ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("said %q", line)
		}
		ready <- err
	}()
	select {
	case err = <-ready:
	case <-time.After(30 * time.Second):
		err = errors.New("not set up within 30 s")
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the noisy tenant: %w (its output is in %s)", err, s.logPath)
	}
	np.cpu0, _ = procstat.CPUTime(cmd.Process.Pid)
	np.began = time.Now()
	return np, nil
}

// Stop ends the tenant and returns its counts and failure.
func (np *noisyProc) Stop() (noisy.Counts, error) {
	if cpu, err := procstat.CPUTime(np.cmd.Process.Pid); err == nil {
		if d := time.Since(np.began); d > 0 {
			np.Cores = float64(cpu-np.cpu0) / float64(d)
		}
	}
	_ = np.stdin.Close()
	line, rerr := np.out.ReadString('\n')
	werr := np.cmd.Wait()
	var rep noisyReport
	if rerr != nil || json.Unmarshal([]byte(strings.TrimSpace(line)), &rep) != nil {
		return noisy.Counts{}, fmt.Errorf("no report from the noisy tenant (%v, %v)", rerr, werr)
	}
	if rep.Error != "" {
		return rep.Counts, errors.New(rep.Error)
	}
	return rep.Counts, nil
}

// The dials' sink as a process of its own (the hidden dial-sink
// subcommand), pinned to the server's CPUs, where the server's end of
// each connection would run: it prints its address, serves until its
// standard input closes, then prints the connections it took.
const sinkCommand = "dial-sink"

func sinkMain(stdin io.Reader, stdout io.Writer) int {
	sk, err := noisy.StartSink()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "listening %s\n", sk.Addr())
	_, _ = io.Copy(io.Discard, stdin)
	sk.Stop()
	fmt.Fprintf(stdout, "accepted %d\n", sk.Accepted())
	return 0
}

// sinkProc is a running dial-sink process.
type sinkProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	addr  string
}

// startSinkProc runs the dials' sink pinned to cpus (none: unpinned).
func (s *runner) startSinkProc(cpus string) (*sinkProc, error) {
	cmd, stdin, stdout, err := s.startSelf(cpus, sinkCommand)
	if err != nil {
		return nil, fmt.Errorf("start the dials' sink: %w", err)
	}
	sp := &sinkProc{cmd: cmd, stdin: stdin, out: stdout}
	line, err := sp.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("the dials' sink said %q (%v); its output is in %s", line, err, s.logPath)
	}
	sp.addr = addr
	return sp, nil
}

// Stop ends the sink and returns the connections it took.
func (sp *sinkProc) Stop() (uint64, error) {
	_ = sp.stdin.Close()
	line, rerr := sp.out.ReadString('\n')
	werr := sp.cmd.Wait()
	var n uint64
	if _, err := fmt.Sscanf(line, "accepted %d", &n); err != nil {
		return 0, fmt.Errorf("no count from the dials' sink (%q: %v, %v, %v)", line, err, rerr, werr)
	}
	return n, nil
}

// startSelf runs this executable with args as a helper process pinned to
// cpus (none: unpinned), its standard error into the suite's log, killed
// if the suite dies; the helper ends when its standard input closes.
func (s *runner) startSelf(cpus string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	if cpus != "" {
		args = append([]string{pinCommand, cpus, "--", self}, args...)
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = s.logw
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, stdin, bufio.NewReader(stdout), nil
}
