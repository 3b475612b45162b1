package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testport"
	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// The binary with --tls-cert and --tls-key, as a process: the listeners
// speak TLS only (spec §D.2), through package netconn.

// tlsProc is a server process with TLS and the files it was given.
type tlsProc struct {
	cmd               *exec.Cmd
	addr              string
	log               *testserver.Output
	ca                *certtest.CA
	certFile, keyFile string
}

// startTLSProc runs the binary with a fresh CA's certificate for
// 127.0.0.1 and extra flags, and waits for it to say listening.
func startTLSProc(t *testing.T, flags ...string) *tlsProc {
	t.Helper()
	return startTLSProcCA(t, certtest.NewCA(t, "dflockd test CA"), flags...)
}

// startTLSProcCA is startTLSProc with the server's certificate from ca.
func startTLSProcCA(t *testing.T, ca *certtest.CA, flags ...string) *tlsProc {
	t.Helper()
	p := &tlsProc{log: new(testserver.Output), ca: ca}
	p.certFile, p.keyFile = p.ca.Leaf(t, "first").Write(t, t.TempDir())
	p.addr = freeAddr(t)
	_, port, _ := net.SplitHostPort(p.addr)
	args := append([]string{"--host", "127.0.0.1", "--port", port, "--tls-cert", p.certFile, "--tls-key", p.keyFile}, flags...)
	p.cmd = exec.Command(binary(t), args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
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
	p.waitLog(t, "msg=listening")
	return p
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	return testport.Addr(t) // (why not port 0: package testport)
}

// waitLog waits for the server's log to contain s.
func (p *tlsProc) waitLog(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.log.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("the server did not log %q:\n%s", s, p.log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tlsClient is a connection to a TLS server.
type tlsClient struct {
	t  *testing.T
	c  *tls.Conn
	rd *bufio.Reader
}

func dialTLS(t *testing.T, addr string, pool *x509.CertPool) *tlsClient {
	t.Helper()
	return dialTLSAs(t, addr, pool, nil)
}

// dialTLSAs is dialTLS presenting a client certificate (nil: none).
func dialTLSAs(t *testing.T, addr string, pool *x509.CertPool, cert *certtest.Leaf) *tlsClient {
	t.Helper()
	cfg := certtest.ClientConfig(pool)
	if cert != nil {
		cfg.Certificates = []tls.Certificate{cert.TLS}
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &tlsClient{t: t, c: c, rd: bufio.NewReader(c)}
}

// do sends one request and returns its reply line.
func (c *tlsClient) do(cmd, key, arg string) string {
	c.t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write([]byte(cmd + "\n" + key + "\n" + arg + "\n")); err != nil {
		c.t.Fatal(err)
	}
	l, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s %s: %v", cmd, key, err)
	}
	return strings.TrimSuffix(l, "\n")
}

// token returns the token of a grant reply, failing on anything else.
func (c *tlsClient) token(reply string) string {
	c.t.Helper()
	f := strings.Fields(reply)
	if len(f) != 3 || f[0] != "ok" || len(f[1]) != 32 {
		c.t.Fatalf("%q is not a grant", reply)
	}
	return f[1]
}

func (c *tlsClient) serial() *big.Int { return c.c.ConnectionState().PeerCertificates[0].SerialNumber }

// closedByServer asserts that the server closed the connection.
func closedByServer(t *testing.T, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server did not close the connection (read %q)", got)
	}
	return got
}

// TLS lock and release and auth through the binary; a plaintext client
// gets no reply and is closed; a client trusting another CA fails its
// handshake; the godistlock port speaks TLS too.
func TestTLSServes(t *testing.T) {
	gd := freeAddr(t)
	_, gdPort, _ := net.SplitHostPort(gd)
	p := startTLSProc(t, "--godistlock-port", gdPort)
	c := dialTLS(t, p.addr, p.ca.Pool)
	tok := c.token(c.do("l", "job", "0 60"))
	if got := c.do("l", "job", "0"); got != "timeout" {
		t.Fatalf("try-lock of a held key on the same connection: %q", got)
	}
	if got := c.do("r", "job", tok); got != "ok" {
		t.Fatalf("release: %q", got)
	}

	plain, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Write([]byte("l\njob\n0\n")); err != nil {
		t.Fatal(err)
	}
	if got := closedByServer(t, plain); len(got) != 0 {
		t.Fatalf("a plaintext client got %q", got)
	}

	other := certtest.NewCA(t, "another CA")
	_, err = tls.Dial("tcp", p.addr, certtest.ClientConfig(other.Pool))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Fatalf("a client trusting another CA: %v, want an unknown authority error", err)
	}

	g := dialTLS(t, gd, p.ca.Pool)
	_ = g.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := g.c.Write([]byte("HELLO 0.1 n1\n")); err != nil {
		t.Fatal(err)
	}
	if l, err := g.rd.ReadString('\n'); err != nil || !strings.HasPrefix(l, "HELLO n1 ") {
		t.Fatalf("godistlock HELLO over TLS: %q %v", l, err)
	}
}

func TestTLSAuthProcess(t *testing.T) {
	p := startTLSProc(t, "--auth-token", "s3cret")
	c := dialTLS(t, p.addr, p.ca.Pool)
	if got := c.do("auth", "_", "s3cret"); got != "ok" {
		t.Fatalf("auth: %q", got)
	}
	c.token(c.do("l", "job", "0 60"))
	bad := dialTLS(t, p.addr, p.ca.Pool)
	if got := bad.do("auth", "_", "guess"); got != "error_auth" {
		t.Fatalf("wrong token: %q", got)
	}
	if rest := closedByServer(t, bad.c); len(rest) != 0 {
		t.Fatalf("after error_auth: %q", rest)
	}
}

// --max-connections counts TLS connections through the same limiter: one
// over the cap is closed before its handshake completes.
func TestTLSMaxConnections(t *testing.T) {
	p := startTLSProc(t, "--max-connections", "1")
	c := dialTLS(t, p.addr, p.ca.Pool)
	if _, err := tls.Dial("tcp", p.addr, certtest.ClientConfig(p.ca.Pool)); err == nil {
		t.Fatal("a second connection completed its handshake under --max-connections 1")
	}
	if got := c.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping: %q", got)
	}
}

// SIGHUP reloads the certificate: a connection made before keeps working
// and keeps its lock; one made after sees the new certificate. A reload
// of a broken pair keeps the one in use.
func TestTLSReloadOnSIGHUP(t *testing.T) {
	p := startTLSProc(t)
	before := dialTLS(t, p.addr, p.ca.Pool)
	first := before.serial()
	tok := before.token(before.do("l", "job", "0 300"))

	second := p.ca.Leaf(t, "second")
	certtest.WriteFile(t, p.certFile, second.CertPEM)
	certtest.WriteFile(t, p.keyFile, second.KeyPEM)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "TLS certificate reloaded")
	after := dialTLS(t, p.addr, p.ca.Pool)
	if got := after.serial(); got.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatalf("after SIGHUP a new connection got certificate %v, want %v (before: %v)", got, second.Cert.SerialNumber, first)
	}
	if got := after.do("l", "job", "0"); got != "timeout" {
		t.Fatalf("the lock taken before the reload is not held: %q", got)
	}
	if got := before.do("n", "job", tok+" 60"); got != "ok 60" {
		t.Fatalf("renew on the connection from before the reload: %q", got)
	}

	// Half a pair: the new certificate without its key.
	third := p.ca.Leaf(t, "third")
	certtest.WriteFile(t, p.certFile, third.CertPEM)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "TLS certificate not reloaded")
	if got := dialTLS(t, p.addr, p.ca.Pool).serial(); got.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatalf("after a failed reload a new connection got %v, want %v still", got, second.Cert.SerialNumber)
	}
}

// SIGTERM drains a TLS server as a plain one: the listener closes, a
// request gets error_draining and a close, and the process exits 0.
func TestTLSDrainOnSIGTERM(t *testing.T) {
	p := startTLSProc(t)
	c := dialTLS(t, p.addr, p.ca.Pool)
	c.token(c.do("l", "job", "0 300"))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "msg=draining")
	for deadline := time.Now().Add(10 * time.Second); ; {
		nc, err := net.DialTimeout("tcp", p.addr, time.Second)
		if err != nil {
			break // refused: the listener is closed
		}
		nc.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts 10 s into the drain")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := c.do("ping", "_", "_"); got != "error_draining" {
		t.Fatalf("a request during the drain: %q", got)
	}
	closedByServer(t, c.c)
	if err := exitWithin(t, p.cmd, 10*time.Second, "its last connection ended"); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.log.String())
	}
	if !strings.Contains(p.log.String(), "msg=stopped") {
		t.Fatalf("no stopped line:\n%s", p.log.String())
	}
}

// Half a pair, or a pair that does not match, refuses to start (exit 2)
// with the reason, before anything listens.
func TestTLSConfigErrors(t *testing.T) {
	ca := certtest.NewCA(t, "CA")
	dir := t.TempDir()
	a, b := ca.Leaf(t, "a"), ca.Leaf(t, "b")
	certA, keyA := a.Write(t, dir)
	keyB := filepath.Join(dir, "b.key")
	certtest.WriteFile(t, keyB, b.KeyPEM)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certA}, "--tls-cert is set but --tls-key (DFLOCKD_TLS_KEY) is not"},
		{[]string{"--tls-key", keyA}, "--tls-key is set but --tls-cert (DFLOCKD_TLS_CERT) is not"},
		{[]string{"--tls-cert", certA, "--tls-key", keyB}, "the private key does not match the certificate"},
		{[]string{"--tls-cert", filepath.Join(dir, "missing.pem"), "--tls-key", keyA}, "missing.pem: no such file or directory"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--port", "0"}, c.args...), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "listening") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	// The binary, too.
	out, err := exitingCommand(t, binary(t), "--tls-cert", certA).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--tls-key") {
		t.Fatalf("--tls-cert alone: %v\n%s", err, out)
	}
}

// What an idle TLS connection costs the server: the resident memory of
// the process with many connections open and idle, against the same with
// none, and the plain (gnet) figure beside it, measured side by side.
// Logged; the test fails only past a bound far above what it measures,
// as a leak would.
func TestTLSIdleConnectionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2000 connections and waits for two quiet intervals")
	}
	const n = 1000
	const bound = 64 << 10 // bytes per connection
	// A GC interval of a second: a server hands its free heap back after
	// a quiet interval (the gnet loops as netconn), and idleCost waits for
	// that, so what is measured is what stays.
	p := startTLSProc(t, "--read-timeout", "600", "--gc-interval", "1")
	plain := startProc(t, "--read-timeout", "600", "--gc-interval", "1")
	cfg := certtest.ClientConfig(p.ca.Pool)
	ping := func(c net.Conn) error {
		// One request, as a real client makes: the session's buffers are
		// used, then idle.
		if _, err := c.Write([]byte("ping\n_\n_\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	var plainPerConn float64
	plainDone := make(chan error, 1)
	go func() {
		var err error
		plainPerConn, err = idleCost(plain.cmd.Process.Pid, n, func() (net.Conn, error) {
			c, err := net.Dial("tcp", plain.addr)
			if err == nil {
				err = ping(c)
			}
			return c, err
		}, func(float64) bool { return true })
		plainDone <- err
	}()
	tlsPerConn, err := idleCost(p.cmd.Process.Pid, n, func() (net.Conn, error) {
		c, err := tls.Dial("tcp", p.addr, cfg)
		if err == nil {
			err = ping(c)
		}
		return c, err
	}, func(perConn float64) bool { return perConn <= bound })
	if err != nil {
		t.Fatal(err)
	}
	if err := <-plainDone; err != nil {
		t.Fatal(err)
	}
	t.Logf("resident memory per idle connection (%d connections): TLS %.1f KiB, plain TCP %.1f KiB",
		n, tlsPerConn/1024, plainPerConn/1024)
	if tlsPerConn > bound {
		t.Errorf("an idle TLS connection costs %.0f bytes, bound %d", tlsPerConn, bound)
	}
}

// idleCost opens n connections with dial and returns the growth of the
// process pid's resident memory per connection, once they are idle: after
// a quiet interval, and then, since a loaded machine may run the server's
// collection and release late, the first figure that settled accepts, or
// the last one sampled in a generous 30 s.
func idleCost(pid, n int, dial func() (net.Conn, error), settled func(perConn float64) bool) (float64, error) {
	warm, err := dial() // the first connection's one-time costs
	if err != nil {
		return 0, err
	}
	defer warm.Close()
	time.Sleep(2200 * time.Millisecond) // a quiet interval: released
	before, err := rssOf(pid)
	if err != nil {
		return 0, err
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := dial()
		if err != nil {
			return 0, fmt.Errorf("connection %d: %w", len(conns)+1, err)
		}
		conns = append(conns, c)
	}
	// Idle: the handshakes' garbage is collected and the free heap
	// released after a quiet GC interval.
	time.Sleep(2200 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		after, err := rssOf(pid)
		if err != nil {
			return 0, err
		}
		perConn := float64(after-before) / float64(n)
		if settled(perConn) || time.Now().After(deadline) {
			return perConn, nil
		}
	}
}

func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
