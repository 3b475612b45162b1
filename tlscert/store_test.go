package tlscert_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/tlscert"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// echoServer serves cfg on a loopback port: each connection echoes lines.
func echoServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				rd := bufio.NewReader(c)
				for {
					line, err := rd.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// dial connects with a client trusting pool and returns the connection
// and the serial number of the certificate the server presented.
func dial(t *testing.T, addr string, pool *certtest.CA) (*tls.Conn, *big.Int) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, certtest.ClientConfig(pool.Pool))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, c.ConnectionState().PeerCertificates[0].SerialNumber
}

func echo(t *testing.T, c *tls.Conn, line string) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo: %q, %v", got, err)
	}
}

func TestReloadSwitchesNewHandshakes(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	first, second := ca.Leaf(t, "first"), ca.Leaf(t, "second")
	dir := t.TempDir()
	certFile, keyFile := first.Write(t, dir)
	st, err := tlscert.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Certificate().Leaf.SerialNumber; got.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("loaded serial %v, want %v", got, first.Cert.SerialNumber)
	}
	addr := echoServer(t, st.Config())
	before, serial := dial(t, addr, ca)
	if serial.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatalf("before the reload the server presented %v, want %v", serial, first.Cert.SerialNumber)
	}
	echo(t, before, "one")

	second.Write(t, dir)
	if err := st.Reload(); err != nil {
		t.Fatal(err)
	}
	_, serial = dial(t, addr, ca)
	if serial.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatalf("after the reload the server presented %v, want %v", serial, second.Cert.SerialNumber)
	}
	// The connection made before the reload goes on.
	echo(t, before, "two")
}

func TestFailedReloadKeepsCertificate(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	first, second := ca.Leaf(t, "first"), ca.Leaf(t, "second")
	dir := t.TempDir()
	certFile, keyFile := first.Write(t, dir)
	st, err := tlscert.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, st.Config())

	cases := []struct {
		name      string
		cert, key []byte
		want      error
	}{
		// A SIGHUP that catches the certificate file half-written.
		{"truncated certificate", second.CertPEM[:len(second.CertPEM)/2], second.KeyPEM, tlscert.ErrNoCertificate},
		// The new certificate is in place, its key not yet.
		{"new certificate, old key", second.CertPEM, first.KeyPEM, tlscert.ErrKeyMismatch},
		{"empty key", second.CertPEM, nil, tlscert.ErrNoKey},
	}
	for _, c := range cases {
		certtest.WriteFile(t, certFile, c.cert)
		certtest.WriteFile(t, keyFile, c.key)
		err := st.Reload()
		if !errors.Is(err, c.want) {
			t.Fatalf("%s: Reload error %v, want %v", c.name, err, c.want)
		}
		if got := st.Certificate().Leaf.SerialNumber; got.Cmp(first.Cert.SerialNumber) != 0 {
			t.Fatalf("%s: the store now holds %v", c.name, got)
		}
		if _, serial := dial(t, addr, ca); serial.Cmp(first.Cert.SerialNumber) != 0 {
			t.Fatalf("%s: a new connection got %v, want the old %v", c.name, serial, first.Cert.SerialNumber)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	a, b := ca.Leaf(t, "a"), ca.Leaf(t, "b")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		certtest.WriteFile(t, p, data)
		return p
	}
	certA, keyA, keyB := write("a.pem", a.CertPEM), write("a.key", a.KeyPEM), write("b.key", b.KeyPEM)
	missing := filepath.Join(dir, "missing.pem")
	garbage := write("garbage.pem", []byte("not a certificate\n"))

	cases := []struct {
		name      string
		cert, key string
		want      error
		mention   string // the file the message must name
	}{
		{"missing certificate file", missing, keyA, fs.ErrNotExist, missing},
		{"missing key file", certA, missing, fs.ErrNotExist, missing},
		{"key of another certificate", certA, keyB, tlscert.ErrKeyMismatch, keyB},
		{"no certificate", garbage, keyA, tlscert.ErrNoCertificate, garbage},
		{"key file holds a certificate", certA, certA, tlscert.ErrNoKey, certA},
		{"certificate file holds a key", keyA, keyA, tlscert.ErrNoCertificate, keyA},
	}
	for _, c := range cases {
		st, err := tlscert.Load(c.cert, c.key)
		if st != nil || !errors.Is(err, c.want) {
			t.Fatalf("%s: Load = %v, %v; want error %v", c.name, st, err, c.want)
		}
		if !strings.Contains(err.Error(), c.mention) {
			t.Fatalf("%s: %q does not name %s", c.name, err, c.mention)
		}
	}
	if _, err := tlscert.Load(certA, keyA); err != nil {
		t.Fatalf("a valid pair: %v", err)
	}
}

// TLS 1.2 at least, as dflockd: an older client fails the handshake.
func TestConfigMinVersion(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	certFile, keyFile := ca.Leaf(t, "leaf").Write(t, t.TempDir())
	st, err := tlscert.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.Config()
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("MinVersion %x", cfg.MinVersion)
	}
	addr := echoServer(t, cfg)
	old := certtest.ClientConfig(ca.Pool)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if c, err := tls.Dial("tcp", addr, old); err == nil {
		c.Close()
		t.Fatal("a TLS 1.1 client completed the handshake")
	}
	c, _ := dial(t, addr, ca)
	if v := c.ConnectionState().Version; v < tls.VersionTLS12 {
		t.Fatalf("negotiated %x", v)
	}
}

// Handshakes racing with reloads each see one whole pair (run with -race).
func TestReloadDuringHandshakes(t *testing.T) {
	ca := certtest.NewCA(t, "test CA")
	leaves := []*certtest.Leaf{ca.Leaf(t, "x"), ca.Leaf(t, "y")}
	dir := t.TempDir()
	certFile, keyFile := leaves[0].Write(t, dir)
	st, err := tlscert.Load(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := echoServer(t, st.Config())
	stop := make(chan struct{})
	reloaded := make(chan int)
	go func() {
		n := 0
		for i := 1; ; i++ {
			select {
			case <-stop:
				reloaded <- n
				return
			default:
			}
			// Not atomic on disk: some reloads fail (a mismatched pair)
			// and must leave a whole pair in place.
			l := leaves[i%2]
			if os.WriteFile(certFile, l.CertPEM, 0o600) != nil || os.WriteFile(keyFile, l.KeyPEM, 0o600) != nil {
				t.Error("writing the pair failed")
			}
			if st.Reload() == nil {
				n++
			}
		}
	}()
	for range 20 {
		c, serial := dial(t, addr, ca)
		if serial.Cmp(leaves[0].Cert.SerialNumber) != 0 && serial.Cmp(leaves[1].Cert.SerialNumber) != 0 {
			t.Fatalf("presented serial %v is neither leaf's", serial)
		}
		echo(t, c, "hello")
		c.Close()
	}
	close(stop)
	if n := <-reloaded; n == 0 {
		t.Fatal("no reload succeeded while the handshakes ran")
	}
}
