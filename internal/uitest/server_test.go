package uitest

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// The server under test is the dflockd binary, built from this tree and
// run as a process with its real flags: what a user starts is what the
// browser sees, the page embedded in it included.

var built struct {
	once sync.Once
	path string
	err  error
}

// binary builds cmd/dflockd once per test run; DFLOCKD_TEST_BINARY names a
// build to use instead.
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DFLOCKD_TEST_BINARY"); p != "" {
		return p
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "dflockd-uitest")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "dflockd")
		out, err := exec.Command("go", "build", "-o", built.path, "../../cmd/dflockd").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// server is a running dflockd.
type server struct {
	addr string // the line protocol's
	url  string // the HTTP listener's, http(s)://host:port
	log  *testserver.Output
	tls  *tls.Config // a client's, when the server serves TLS
}

// startServer runs the binary on free loopback ports, with the
// observatory's events on and extra flags, until the test ends.
func startServer(t *testing.T, flags ...string) *server {
	t.Helper()
	return startServerTLS(t, nil, flags...)
}

// startServerTLS is startServer serving TLS on both listeners with cert,
// when not nil.
func startServerTLS(t *testing.T, cert *testserver.Cert, flags ...string) *server {
	t.Helper()
	addr, httpAddr := freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	s := &server{addr: addr, url: "http://" + httpAddr}
	if cert != nil {
		dir := t.TempDir()
		certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if err := os.WriteFile(certFile, cert.CertPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, cert.KeyPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		flags = append(flags, "--tls-cert", certFile, "--tls-key", keyFile)
		s.url = "https://" + httpAddr
		s.tls = &tls.Config{RootCAs: cert.Pool}
	}
	args := append([]string{"--host", "127.0.0.1", "--port", port, "--http-port", httpPort,
		"--observatory-events", "4096", "--shutdown-timeout", "1"}, flags...)
	proc := testserver.Spawn(t, exec.Command(binary(t), args...))
	s.log = proc.Out
	// Ready once it says it listens and /ui answers: another process may
	// have taken a port since it was free, and would answer instead.
	hc := s.httpClient(2 * time.Second)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if strings.Contains(s.log.String(), "listening") {
			if res, err := hc.Get(s.url + "/ui"); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		select {
		case <-proc.Done():
			t.Fatalf("server exited (%v):\n%s", proc.Err(), s.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not serving /ui on %s within 20 s:\n%s", httpAddr, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// client is one line-protocol connection: one session of the server.
type client struct {
	t    *testing.T
	name string
	c    net.Conn
	r    *bufio.Reader
}

func dial(t *testing.T, s *server, name string) *client {
	t.Helper()
	var c net.Conn
	var err error
	if s.tls != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.addr, s.tls)
	} else {
		c, err = net.DialTimeout("tcp", s.addr, 5*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, name: name, c: c, r: bufio.NewReader(c)}
}

// local is the client's address, as the server reports its holder.
func (c *client) local() string { return c.c.LocalAddr().String() }

// send writes one request without waiting for its reply.
func (c *client) send(cmd, key, arg string) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		c.t.Fatalf("%s: send %s %s: %v", c.name, cmd, key, err)
	}
}

// reply reads the next reply, waiting at most 30 s for it.
func (c *client) reply() string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("%s: reply: %v (read %q)", c.name, err, l)
	}
	return strings.TrimSuffix(l, "\n")
}

// lock takes key with a lease of leaseS seconds, waiting up to timeoutS
// for it, and returns the token.
func (c *client) lock(key string, timeoutS, leaseS int) string {
	c.t.Helper()
	c.send("l", key, strconv.Itoa(timeoutS)+" "+strconv.Itoa(leaseS))
	return c.granted(key)
}

// granted reads the reply of a lock request and returns its token.
func (c *client) granted(key string) string {
	c.t.Helper()
	f := strings.Fields(c.reply())
	if len(f) < 3 || f[0] != "ok" {
		c.t.Fatalf("%s: l %s: %q, want ok TOKEN LEASE", c.name, key, strings.Join(f, " "))
	}
	return f[1]
}

func (c *client) release(key, token string) {
	c.t.Helper()
	c.send("r", key, token)
	if r := c.reply(); r != "ok" {
		c.t.Fatalf("%s: r %s: %q, want ok", c.name, key, r)
	}
}

// deadlocks asks GET /v1/deadlocks how many deadlocks there are, which
// also starts the server's second of answering that search's result.
func (s *server) deadlocks(t *testing.T) int {
	t.Helper()
	hc := s.httpClient(10 * time.Second)
	defer hc.CloseIdleConnections()
	res, err := hc.Get(s.url + "/v1/deadlocks")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var reply struct {
		Deadlocks []json.RawMessage `json:"deadlocks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/deadlocks: %d %v", res.StatusCode, err)
	}
	return len(reply.Deadlocks)
}

// httpClient is a client of the server's HTTP listener.
func (s *server) httpClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: s.tls}}
}
