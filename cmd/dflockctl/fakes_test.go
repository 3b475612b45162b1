package main

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// notLeader fakes a cluster follower: it answers ping, and refuses
// anything else with error_not_leader naming leader.
func notLeader(t *testing.T, leader string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return testserver.StartFake(t, ln, func(cmd, _, _ string) string {
		if cmd == "ping" {
			return "ok"
		}
		return "error_not_leader " + leader
	}).Addr()
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
	addr := testserver.StartFake(t, ln, func(cmd, _, _ string) string {
		if cmd == "incr" {
			return "ok 1"
		}
		return "ok"
	}).Addr()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, cert.CAPEM, 0o600)
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
