package client_test

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// fakeServer is a tiny line-protocol server for what the real one cannot
// do yet (cluster redirects, TLS): it answers each request with reply and
// records what it received.
type fakeServer struct {
	ln    net.Listener
	reply func(cmd, key, arg string) string

	mu   sync.Mutex
	reqs []string // "cmd key arg"
}

// startFake serves on ln (a loopback listener when nil) until the test
// ends.
func startFake(t *testing.T, ln net.Listener, reply func(cmd, key, arg string) string) *fakeServer {
	t.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	f := &fakeServer{ln: ln, reply: reply}
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

func (f *fakeServer) Addr() string { return f.ln.Addr().String() }

func (f *fakeServer) serve(c net.Conn) {
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

// requests returns what the fake has received so far.
func (f *fakeServer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}
