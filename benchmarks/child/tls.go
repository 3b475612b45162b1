package child

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// TLSFiles are a throw-away certificate authority and a server certificate
// it signed for 127.0.0.1, written as PEM files for servers that take
// file names (dflockd-ng's --tls-cert, redis-server's --tls-cert-file),
// with the client configuration that trusts the CA. ECDSA P-256, the
// common choice of a modern deployment and what the handshakes of both
// servers then cost alike. For benchmarks only.
type TLSFiles struct {
	CAFile, CertFile, KeyFile string
	pool                      *x509.CertPool
}

// NewTLSFiles makes the CA and the certificate and writes them into dir.
func NewTLSFiles(dir string) (*TLSFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dflockbench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	f := &TLSFiles{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
		pool:     x509.NewCertPool(),
	}
	f.pool.AddCert(ca)
	for _, w := range []struct {
		path, kind string
		der        []byte
	}{{f.CAFile, "CERTIFICATE", caDER}, {f.CertFile, "CERTIFICATE", der}, {f.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der}), 0o600); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ClientConfig is a client configuration that trusts the CA.
func (f *TLSFiles) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: f.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// pinned prefixes exe with taskset when cpus is not empty, so that the
// server runs on those CPUs only (taskset execs it: the PID is the
// server's).
func pinned(cpus, exe string, args []string) (string, []string) {
	if cpus == "" {
		return exe, args
	}
	return "taskset", append([]string{"-c", cpus, exe}, args...)
}

// startProbed runs exe with args and returns once probe(addr) succeeds.
func startProbed(ctx context.Context, name, exe string, args []string, addr string, stderr io.Writer,
	probe func(string) error) (*Process, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("child: start %s: %w", name, err)
	}
	p := &Process{Name: name, Addr: addr, PID: cmd.Process.Pid, cmd: cmd}
	deadline := time.Now().Add(startup)
	for {
		err := probe(addr)
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, fmt.Errorf("child: %s on %s did not answer within %v: %w", name, addr, startup, err)
		}
		time.Sleep(20 * time.Millisecond) // nothing to wait on but the port itself
	}
}

// StartRedisTLS starts a throw-away redis-server that speaks TLS only
// (--port 0 --tls-port), with the certificate of f and no client
// certificates asked for, persistence off, pinned to cpus (a taskset list;
// empty = not pinned), and waits until it answers PING over TLS.
// Debian's redis-server is built with TLS.
func StartRedisTLS(ctx context.Context, bin string, f *TLSFiles, cpus string, stderr io.Writer) (*Process, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("child: %w (apt-get install redis-server)", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	exe, args := pinned(cpus, path, []string{"--bind", "127.0.0.1", "--port", "0", "--tls-port", fmt.Sprint(port),
		"--tls-cert-file", f.CertFile, "--tls-key-file", f.KeyFile, "--tls-ca-cert-file", f.CAFile,
		"--tls-auth-clients", "no", "--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"})
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	return startProbed(ctx, "redis-tls", exe, args, addr, stderr, func(a string) error {
		return probeTLS(a, f.ClientConfig(), "*1\r\n$4\r\nPING\r\n", "+PONG\r\n")
	})
}

// StartDflockdTLS starts the dflockd-ng binary bin with TLS only
// (--tls-cert, --tls-key of f) on a free loopback port, with extra flags,
// pinned to cpus, and waits until it answers ping over TLS.
func StartDflockdTLS(ctx context.Context, bin string, f *TLSFiles, cpus string, extra []string, stderr io.Writer) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	exe, args := pinned(cpus, bin, append([]string{"--host", "127.0.0.1", "--port", fmt.Sprint(port),
		"--tls-cert", f.CertFile, "--tls-key", f.KeyFile}, extra...))
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	return startProbed(ctx, "ng-tls", exe, args, addr, stderr, func(a string) error {
		return probeTLS(a, f.ClientConfig(), "ping\n_\n_\n", "ok\n")
	})
}

// probeTLS sends req over a TLS connection and wants the reply line want.
func probeTLS(addr string, cfg *tls.Config, req, want string) error {
	d := &net.Dialer{Timeout: time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("answered %q, want %q", got, want)
	}
	return nil
}
