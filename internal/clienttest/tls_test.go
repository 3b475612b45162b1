package clienttest

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// TestTLSWithFakeServer runs the client's TLS code against a TLS listener
// of crypto/tls alone, so that a failure here points at the client.
func TestTLSWithFakeServer(t *testing.T) {
	t.Parallel()
	cert := testserver.NewCert(t)
	pool := cert.Pool
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert.TLS}})
	must(t, err)
	f := testserver.StartFake(t, ln, func(cmd, _, arg string) string {
		switch cmd {
		case "auth":
			if arg == "s3cret" {
				return "ok"
			}
			return "error_auth"
		case "l":
			return "ok 00000000000000010123456789abcdef 33"
		}
		return "ok"
	})
	cfg := &tls.Config{RootCAs: pool} // ServerName comes from the address

	c, err := client.DialTLS(f.Addr(), cfg)
	must(t, err)
	must(t, client.Ping(c))
	tok, _, err := client.Acquire(c, "k", 0)
	if err != nil || tok != "00000000000000010123456789abcdef" {
		t.Fatalf("Acquire over TLS = %q, %v", tok, err)
	}
	c.Close()

	d := client.Dialer{TLSConfig: cfg, AuthToken: "s3cret"}
	c, err = d.Dial(ctxTimeout(t, 10*time.Second), f.Addr())
	must(t, err)
	c.Close()
	d.AuthToken = "wrong"
	_, err = d.Dial(ctxTimeout(t, 10*time.Second), f.Addr())
	wantErr(t, err, client.ErrAuth, "Dial with a wrong token over TLS")

	l := &client.Lock{Key: "k", Servers: []string{f.Addr()}, TLSConfig: cfg, AuthToken: "s3cret"}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Lock over TLS = %v, %v", ok, err)
	}
	l.Close()
	reqs := f.Requests()
	if reqs[len(reqs)-2] != "auth _ s3cret" || !strings.HasPrefix(reqs[len(reqs)-1], "l k ") {
		t.Fatalf("the Lock sent %q; want auth then l", reqs[len(reqs)-2:])
	}

	// An untrusted certificate fails the handshake.
	if _, err := client.DialTLS(f.Addr(), &tls.Config{}); err == nil {
		t.Fatal("DialTLS trusted an unknown certificate")
	}
}

// TestTLSWithRealServer runs the client over TLS against the server with
// --tls-cert. A server that refuses to start with it fails the test: it
// serves TLS, so a refusal is a regression, not a feature still to come.
func TestTLSWithRealServer(t *testing.T) {
	t.Parallel()
	cert := testserver.NewCert(t)
	pool := cert.Pool
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(certFile, cert.CertPEM, 0o600))
	must(t, os.WriteFile(keyFile, cert.KeyPEM, 0o600))
	srv := testserver.Start(t, "--tls-cert", certFile, "--tls-key", keyFile, "--auth-token", "s3cret")
	d := client.Dialer{TLSConfig: &tls.Config{RootCAs: pool}, AuthToken: "s3cret"}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), srv.Addr())
	must(t, err)
	defer c.Close()
	tok, _, err := client.Acquire(c, "k", 0)
	must(t, err)
	must(t, client.Release(c, "k", tok))
	l := &client.Lock{Key: "k", Servers: []string{srv.Addr()}, TLSConfig: d.TLSConfig, AuthToken: "s3cret"}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Lock over TLS = %v, %v", ok, err)
	}
	must(t, l.Release(context.Background()))
}
