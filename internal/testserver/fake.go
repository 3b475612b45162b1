package testserver

import (
	"bufio"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fake is a tiny line-protocol server for what the real one cannot do
// (cluster redirects, TLS, silence): it answers each request with what its
// reply function returns and records the requests.
type Fake struct {
	ln    net.Listener
	reply func(cmd, key, arg string) string

	mu   sync.Mutex
	reqs []string // "cmd key arg"
}

// StartFake serves on ln (a loopback listener when nil) until the test
// ends. reply runs on the connection's goroutine; it may block until the
// test's context is done.
func StartFake(t testing.TB, ln net.Listener, reply func(cmd, key, arg string) string) *Fake {
	t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	f := &Fake{ln: ln, reply: reply}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, nil)
			wg.Go(func() { f.serve(c) })
		}
	})
	return f
}

// Addr returns the fake's host:port.
func (f *Fake) Addr() string { return f.ln.Addr().String() }

func (f *Fake) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		var lines [3]string
		for i := range lines {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines[i] = strings.TrimSuffix(l, "\n")
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, strings.Join(lines[:], " "))
		f.mu.Unlock()
		if _, err := c.Write([]byte(f.reply(lines[0], lines[1], lines[2]) + "\n")); err != nil {
			return
		}
	}
}

// Requests returns the requests received so far, each as "cmd key arg".
func (f *Fake) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// Eventually polls cond until it holds, failing the test after a
// generous deadline, which only matters when the test fails anyway.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Output collects a process's output while a test may read it.
type Output struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns everything written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// Process is a command started by Spawn.
type Process struct {
	Out  *Output // its stdout and stderr
	done chan struct{}
	err  error
}

// Done is closed once the process has exited; Err is then its exit.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit (cmd.Wait's error), once Done is closed.
func (p *Process) Err() error { return p.err }

// Spawn starts cmd with its output going to the process's Out, and kills
// it when t ends, logging that output if t failed.
func Spawn(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Out: new(Output), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("server log:\n%s", p.Out.String())
		}
	})
	return p
}
