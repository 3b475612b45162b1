package main

import (
	"bufio"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// lineServer serves the line protocol on ln until the test ends, answering
// each request with reply(cmd).
func lineServer(t *testing.T, ln net.Listener, reply func(cmd string) string) string {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
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
					if _, err := c.Write([]byte(reply(lines[0]) + "\n")); err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}

// notLeader fakes a cluster follower: it answers ping, and refuses
// anything else with error_not_leader naming leader.
func notLeader(t *testing.T, leader string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lineServer(t, ln, func(cmd string) string {
		if cmd == "ping" {
			return "ok"
		}
		return "error_not_leader " + leader
	})
}

// TestTLSOptions runs the TLS options against a TLS listener of crypto/tls
// (the server has no TLS yet).
func TestTLSOptions(t *testing.T) {
	t.Parallel()
	cert := testserver.NewCert(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	if err != nil {
		t.Fatal(err)
	}
	addr := lineServer(t, ln, func(cmd string) string {
		if cmd == "incr" {
			return "ok 1"
		}
		return "ok"
	})
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, cert.CertPEM, 0o600)
	expectOut(t, run(t, nil, "--tls-ca", ca, "--server", addr, "ping"), 0, "ok\n", "ping over TLS")
	expectOut(t, run(t, nil, "counter", "incr", "n", "--server", addr, "--tls-ca", ca), 0, "1\n", "TLS options after the command")
	expectOut(t, run(t, nil, "--tls-insecure", "--server", addr, "ping"), 0, "ok\n", "--tls-insecure")
	r := run(t, nil, "--tls", "--server", addr, "ping")
	expectCode(t, r, exitFailure, "untrusted certificate")
	if !strings.Contains(r.stderr, "certificate") {
		t.Fatalf("stderr %q", r.stderr)
	}
	expectCode(t, run(t, nil, "--tls-ca", filepath.Join(dir, "none.pem"), "--server", addr, "ping"), exitUsage, "missing CA file")
	expectCode(t, run(t, nil, "--tls-cert", ca, "--server", addr, "ping"), exitUsage, "--tls-cert without --tls-key")
	// The real server refuses TLS flags for now; plain dflockctl against a
	// TLS listener fails rather than hangs.
	expectCode(t, run(t, nil, "--server", addr, "ping"), exitFailure, "plain TCP to a TLS listener")
}
