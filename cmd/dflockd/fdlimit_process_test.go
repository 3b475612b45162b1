package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// The server as a process at its file descriptor limit (internal/fdguard):
// it must stay up, keep serving the connections it has, refuse or hold new
// ones without spinning or flooding the log, and serve again once
// descriptors free up.

// startLimitedProc runs bin under `ulimit -n fds` with the HTTP API on, and
// waits for it to say listening.
func startLimitedProc(t *testing.T, bin string, fds int, flags ...string) *httpProc {
	t.Helper()
	limited := func(name string, args ...string) *exec.Cmd {
		script := `ulimit -n ` + strconv.Itoa(fds) + ` && exec "$0" "$@"`
		return exec.Command("sh", append([]string{"-c", script, name}, args...)...)
	}
	return startHTTPProcVia(t, limited, bin, flags...)
}

func TestFDExhaustionKeepsServing(t *testing.T) {
	t.Run("tcp", func(t *testing.T) {
		p := startLimitedProc(t, binary(t), 256)
		fdExhaustion(t, p, func() (net.Conn, error) { return net.DialTimeout("tcp", p.addr, 10*time.Second) })
	})
	t.Run("tls", func(t *testing.T) {
		// netconn's accept loop, and HTTPS on the same certificate.
		ca := certtest.NewCA(t, "dflockd test CA")
		cert, key := ca.Leaf(t, "fd").Write(t, t.TempDir())
		p := startLimitedProc(t, binary(t), 256, "--tls-cert", cert, "--tls-key", key)
		p.base = strings.Replace(p.base, "http://", "https://", 1)
		p.hc.Transport = &http.Transport{TLSClientConfig: certtest.ClientConfig(ca.Pool)}
		fdExhaustion(t, p, func() (net.Conn, error) {
			d := &net.Dialer{Timeout: 10 * time.Second}
			return tls.DialWithDialer(d, "tcp", p.addr, certtest.ClientConfig(ca.Pool))
		})
	})
}

// fdExhaustion floods p, which runs under `ulimit -n 256`, with 300 raw
// connections; dial opens a client connection of p's transport.
func fdExhaustion(t *testing.T, p *httpProc, dial func() (net.Conn, error)) {
	const limit, clients = 256, 300
	fc, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fc.Close() })
	first := &lineClient{t: t, c: fc, rd: bufio.NewReader(fc)}
	if got := first.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping before the flood: %q", got)
	}
	held := first.do("l", "fd-held", "0 300")
	if !strings.HasPrefix(held, "ok ") {
		t.Fatalf("lock before the flood: %q", held)
	}

	// More connections than descriptors: the kernel completes them all
	// (the backlog), the server can accept only so many.
	start := time.Now()
	var flood []net.Conn
	t.Cleanup(func() {
		for _, c := range flood {
			c.Close()
		}
	})
	for i := 0; i < clients; i++ {
		c, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		flood = append(flood, c)
	}
	waitFor(t, "the server to report running out of descriptors",
		func() bool { return strings.Contains(p.log.String(), "out of file descriptors") })

	// Still up, and the connections it has are served.
	if err := p.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the server is gone: %v", err)
	}
	if got := first.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping on an open connection at the limit: %q", got)
	}
	if got := first.do("n", "fd-held", strings.Fields(held)[1]+" 300"); !strings.HasPrefix(got, "ok") {
		t.Fatalf("renew of a lock held through the flood: %q", got)
	}

	// Once some close, new connections are served again.
	for _, c := range flood[:clients/2] {
		c.Close()
	}
	flood = flood[clients/2:]
	awaitServed(t, dial)

	fams := scrapeRetrying(t, p)
	if v := metricValue(fams, "dflockd_accept_fd_exhausted_total"); v < 1 {
		t.Errorf("dflockd_accept_fd_exhausted_total = %v, want ≥ 1", v)
	}
	if v := metricValue(fams, "dflockd_accept_fd_refused_total"); v < 0 {
		t.Errorf("dflockd_accept_fd_refused_total missing")
	}

	waitFor(t, "a line saying the server accepts again",
		func() bool { return strings.Contains(p.log.String(), "accepting connections again") })

	// The condition is logged at most once a second (plus the first line
	// of the spell): fewer lines than the seconds the test has taken is a
	// bound that a slow machine only loosens.
	lines := strings.Count(p.log.String(), "out of file descriptors")
	if max := int(time.Since(start)/time.Second) + 2; lines > max {
		t.Errorf("%d lines about running out of descriptors in %v: not rate limited", lines, time.Since(start))
	}
	t.Logf("%d connections under ulimit -n %d: %d exhaustion lines, exhausted=%v refused=%v",
		clients, limit, lines, metricValue(fams, "dflockd_accept_fd_exhausted_total"),
		metricValue(fams, "dflockd_accept_fd_refused_total"))

	// It drains and exits 0 as usual.
	for _, c := range flood {
		c.Close()
	}
	flood = nil
	first.c.Close()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// awaitServed dials until a new connection answers ping (one accepted
// while descriptors were still out is refused: closed at once).
func awaitServed(t *testing.T, dial func() (net.Conn, error)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		c, err := dial()
		if err != nil {
			last = err.Error()
			continue
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = c.Write([]byte("ping\n_\n_\n"))
		buf := make([]byte, 3)
		if err == nil {
			_, err = readFull(c, buf)
		}
		c.Close()
		if err == nil && string(buf) == "ok\n" {
			return
		}
		last = "reply " + string(buf)
		if err != nil {
			last = err.Error()
		}
	}
	t.Fatalf("no new connection was served once descriptors were freed (last: %s)", last)
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// scrapeRetrying scrapes /metrics, retrying while the connection is
// refused for want of descriptors.
func scrapeRetrying(t *testing.T, p *httpProc) map[string]*dto.MetricFamily {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var fams map[string]*dto.MetricFamily
		if fams, err = tryScrape(p); err == nil {
			return fams
		}
	}
	t.Fatalf("GET /metrics: %v", err)
	return nil
}

func tryScrape(p *httpProc) (map[string]*dto.MetricFamily, error) {
	resp, err := p.hc.Get(p.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

func TestAbnormalLoopExitIsNonZero(t *testing.T) {
	p := startLimitedProc(t, faultBinary(t), 1024)
	c := dialLine(t, p.addr)
	if got := c.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping: %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	err := exitWithin(t, p.cmd, 60*time.Second, "its loops stopped")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("exit after the loops stopped by themselves: %v, want a non-zero status", err)
	}
	if !strings.Contains(p.log.String(), "level=ERROR") || !strings.Contains(p.log.String(), "event loops stopped") {
		t.Fatalf("no ERROR line giving the reason:\n%s", p.log.String())
	}
	t.Logf("exit status %d; %s", ee.ExitCode(), lastLine(p.log.String(), "level=ERROR"))
}

// lastLine is the last line of log containing s.
func lastLine(log, s string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}
