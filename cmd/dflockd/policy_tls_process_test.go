package main

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// Mutual TLS with a policy (--tls-client-ca): a client certificate whose
// name a `cert` line lists is that identity, with no auth line, on the
// line protocol, godistlock and HTTP; an auth line on such a connection
// must name the same identity; a connection without one authenticates
// with a token as before; a godistlock connection without one is closed.
func TestPolicyClientCertificates(t *testing.T) {
	ca := certtest.NewCA(t, "dflockd test CA")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "clients.pem")
	certtest.WriteFile(t, caFile, ca.PEM())
	file := filepath.Join(dir, "policy")
	writePolicy(t, file, `identity team-a
  token %A
  cert team-a.clients
  allow lock,read,observe a/*
identity team-b
  token %B
  allow lock b/*
`)
	_, gdPort, _ := net.SplitHostPort(freeAddr(t))
	_, httpPort, _ := net.SplitHostPort(freeAddr(t))
	p := startTLSProcCA(t, ca, "--tls-client-ca", caFile, "--policy-file", file,
		"--godistlock-port", gdPort, "--http-port", httpPort)
	certA, stranger := ca.ClientLeaf(t, "team-a.clients"), ca.ClientLeaf(t, "nobody.clients")

	a := dialTLSAs(t, p.addr, ca.Pool, certA)
	if got := a.do("l", "a/job", "0 30"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-a by certificate, no auth line: %q", got)
	}
	if got := a.do("l", "b/job", "0 30"); got != "error_denied" {
		t.Fatalf("team-a by certificate on b/job: %q", got)
	}
	if got := a.do("auth", "_", "tok-a"); got != "ok" {
		t.Fatalf("auth with the certificate's own identity's token: %q", got)
	}
	a2 := dialTLSAs(t, p.addr, ca.Pool, certA)
	if got := a2.do("auth", "_", "tok-b"); got != "error_auth" {
		t.Fatalf("auth with another identity's token over team-a's certificate: %q", got)
	}
	if rest := closedByServer(t, a2.c); len(rest) != 0 {
		t.Fatalf("after error_auth: %q", rest)
	}

	// No certificate, or one no identity lists: a token, as before.
	for i, cert := range []*certtest.Leaf{nil, stranger} {
		key := "b/job-" + string(rune('0'+i))
		c := dialTLSAs(t, p.addr, ca.Pool, cert)
		if got := c.do("l", key, "0 30"); got != "error_auth" {
			t.Fatalf("no identity, no auth line: %q", got)
		}
		c = dialTLSAs(t, p.addr, ca.Pool, cert)
		if got := c.do("auth", "_", "tok-b"); got != "ok" {
			t.Fatal(got)
		}
		if got := c.do("l", key, "0 30"); !strings.HasPrefix(got, "ok ") {
			t.Fatalf("team-b by token over TLS: %q", got)
		}
	}

	// godistlock: the certificate is the only credential.
	gd := dialTLSAs(t, "127.0.0.1:"+gdPort, ca.Pool, certA)
	if got := gdDo(t, gd, "ON a/gd 60000 n1"); !strings.HasPrefix(got, "GIVE n1 ") {
		t.Fatalf("godistlock ON a/gd as team-a: %q", got)
	}
	if got := gdDo(t, gd, "TRY b/gd 60000 n2"); got != "NO n2" {
		t.Fatalf("godistlock TRY b/gd as team-a: %q", got)
	}
	anon := dialTLSAs(t, "127.0.0.1:"+gdPort, ca.Pool, nil)
	if rest := closedByServer(t, anon.c); len(rest) != 0 {
		t.Fatalf("godistlock without a certificate: %q before the close", rest)
	}

	// HTTP: the certificate names the caller, with no bearer token.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{certA.TLS}}}}
	resp, err := hc.Get("https://127.0.0.1:" + httpPort + "/v1/acl/whoami")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"identity":"team-a"`) {
		t.Fatalf("whoami by certificate: %d %s", resp.StatusCode, body)
	}
}

// gdDo sends one godistlock line and reads one.
func gdDo(t *testing.T, c *tlsClient, line string) string {
	t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	l, err := c.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return strings.TrimSuffix(l, "\n")
}

// A client CA file that holds no certificate, or none at all, stops the
// server at start, naming the file; --tls-client-ca without TLS too.
func TestPolicyClientCAErrors(t *testing.T) {
	ca := certtest.NewCA(t, "dflockd test CA")
	dir := t.TempDir()
	certFile, keyFile := ca.Leaf(t, "srv").Write(t, dir)
	junk := filepath.Join(dir, "junk.pem")
	certtest.WriteFile(t, junk, []byte("not a certificate\n"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", junk},
			"--tls-client-ca: tlscert: no PEM CERTIFICATE block in the client CA file: " + junk},
		{[]string{"--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", filepath.Join(dir, "missing.pem")},
			"--tls-client-ca: tlscert: client CA: open " + filepath.Join(dir, "missing.pem")},
		{[]string{"--tls-client-ca", junk}, "--tls-client-ca (DFLOCKD_TLS_CLIENT_CA) needs TLS"},
	} {
		var out strings.Builder
		cmd := exitingCommand(t, binary(t), append([]string{"--port", "0"}, tc.args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err == nil || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: %v, output %q; want an exit naming %q", tc.args, err, out.String(), tc.want)
		}
	}
}
