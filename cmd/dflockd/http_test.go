package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// The binary with --http-port, as a process: the HTTP API (spec §F.2)
// over the hub the line protocol's clients use, /metrics, readiness
// through a drain, auth, and HTTPS with the TCP listener's certificate.

// httpProc is a server process serving the HTTP API.
type httpProc struct {
	cmd  *exec.Cmd
	addr string // the line protocol's
	base string // "http://127.0.0.1:port" (https with TLS)
	log  *testserver.Output
	hc   *http.Client
}

// startHTTPProc runs the binary with the HTTP API on a free port and
// extra flags, and waits for it to say listening.
func startHTTPProc(t *testing.T, flags ...string) *httpProc {
	t.Helper()
	return startHTTPProcVia(t, exec.Command, binary(t), flags...)
}

// startHTTPProcVia is startHTTPProc with the binary bin, run by command
// (exec.Command, or one that wraps it in a shell).
func startHTTPProcVia(t *testing.T, command func(string, ...string) *exec.Cmd, bin string, flags ...string) *httpProc {
	t.Helper()
	p := &httpProc{addr: freeAddr(t), log: new(testserver.Output), hc: &http.Client{Timeout: 10 * time.Second}}
	_, port, _ := net.SplitHostPort(p.addr)
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	p.base = "http://" + httpAddr
	args := append([]string{"--host", "127.0.0.1", "--port", port, "--http-port", httpPort}, flags...)
	p.cmd = command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.hc.CloseIdleConnections()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", p.log.String())
		}
	})
	waitFor(t, "the server to say listening", func() bool { return strings.Contains(p.log.String(), "msg=listening") })
	if !strings.Contains(p.log.String(), "http_addr="+httpAddr) {
		t.Fatalf("the listening line lacks http_addr=%s:\n%s", httpAddr, p.log.String())
	}
	return p
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// call makes one request; body, if not nil, is sent as JSON. It returns
// the status and the body.
func (p *httpProc) call(t *testing.T, method, path, session, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if session != "" {
		req.Header.Set("X-Dflockd-Session", session)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// decode calls and decodes a JSON reply of the wanted status into v.
func (p *httpProc) decode(t *testing.T, want int, method, path, session, token string, body, v any) {
	t.Helper()
	code, b := p.call(t, method, path, session, token, body)
	if code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %q is not the JSON expected: %v", method, path, b, err)
		}
	}
}

// newSession opens an HTTP session.
func (p *httpProc) newSession(t *testing.T, token string) string {
	t.Helper()
	var s struct {
		SessionID    string `json:"session_id"`
		IdleTimeoutS int64  `json:"idle_timeout_s"`
	}
	p.decode(t, http.StatusOK, "POST", "/v1/sessions", "", token, nil, &s)
	if len(s.SessionID) != 32 || s.IdleTimeoutS != 20 {
		t.Fatalf("POST /v1/sessions: %+v, want a 32-hex id and idle_timeout_s 20 (the default)", s)
	}
	return s.SessionID
}

// grantReply is the answer to an acquire.
type grantReply struct {
	Status    string `json:"status"`
	Token     string `json:"token"`
	LeaseTTLS int64  `json:"lease_ttl_s"`
}

// scrape parses GET /metrics with Prometheus's own text parser.
func (p *httpProc) scrape(t *testing.T, token string) map[string]*dto.MetricFamily {
	t.Helper()
	code, b := p.call(t, "GET", "/metrics", "", token, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// metricValue is the value of the family's sample whose labels include
// want (name=value pairs); -1 if there is none.
func metricValue(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == want[i] && l.GetValue() == want[i+1]
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// lineClient is a plain line-protocol connection.
type lineClient struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialLine(t *testing.T, addr string) *lineClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &lineClient{t: t, c: c, rd: bufio.NewReader(c)}
}

func (c *lineClient) send(cmd, key, arg string) {
	c.t.Helper()
	if _, err := c.c.Write([]byte(cmd + "\n" + key + "\n" + arg + "\n")); err != nil {
		c.t.Fatal(err)
	}
}

func (c *lineClient) reply() string {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	l, err := c.rd.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a reply: %v", err)
	}
	return strings.TrimSuffix(l, "\n")
}

func (c *lineClient) do(cmd, key, arg string) string {
	c.t.Helper()
	c.send(cmd, key, arg)
	return c.reply()
}

// statsShape is a stats document with the times, which move between two
// reads, zeroed: what remains must be the same whoever asks.
func statsShape(t *testing.T, doc []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("stats %q: %v", doc, err)
	}
	for _, arr := range m {
		items, _ := arr.([]any)
		for _, it := range items {
			if o, ok := it.(map[string]any); ok {
				for _, k := range []string{"lease_expires_in_s", "idle_s"} {
					if _, ok := o[k]; ok {
						o[k] = 0.0
					}
				}
			}
		}
	}
	return m
}

// An HTTP session and TCP clients of one server share a FIFO: a TCP
// client waiting for a key the session holds gets it when the session
// releases it, with a later fence. /v1/stats is the TCP stats document;
// /health and /ready answer; /metrics counts both transports.
func TestHTTPServesWithTCP(t *testing.T) {
	p := startHTTPProc(t)
	sid := p.newSession(t, "")
	before := p.scrape(t, "")

	var g grantReply
	p.decode(t, http.StatusOK, "POST", "/v1/locks/job", sid, "", map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 60}, &g)
	if g.Status != "ok" || len(g.Token) != 32 || g.LeaseTTLS != 60 {
		t.Fatalf("HTTP acquire: %+v", g)
	}
	waiter := dialLine(t, p.addr)
	waiter.send("l", "job", "30")
	// The TCP client queues behind the HTTP session.
	var stats []byte
	waitFor(t, "the TCP client to queue on job", func() bool {
		_, stats = p.call(t, "GET", "/v1/stats", "", "", nil)
		var doc struct {
			Locks []struct {
				Key     string `json:"key"`
				Waiters int    `json:"waiters"`
			} `json:"locks"`
		}
		return json.Unmarshal(stats, &doc) == nil && len(doc.Locks) == 1 && doc.Locks[0].Key == "job" && doc.Locks[0].Waiters == 1
	})

	// /v1/stats is what the TCP stats command answers.
	other := dialLine(t, p.addr)
	tcpStats, ok := strings.CutPrefix(other.do("stats", "_", "_"), "ok ")
	if !ok {
		t.Fatalf("TCP stats: %q", tcpStats)
	}
	code, httpStats := p.call(t, "GET", "/v1/stats", "", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/stats: %d %s", code, httpStats)
	}
	tcpDoc, httpDoc := statsShape(t, []byte(tcpStats)), statsShape(t, httpStats)
	if !reflect.DeepEqual(tcpDoc, httpDoc) {
		t.Fatalf("GET /v1/stats = %s\nTCP stats     = %s", httpStats, tcpStats)
	}
	// Two TCP connections and the HTTP session (spec §F.1, V2).
	if n := httpDoc["connections"]; n != 3.0 {
		t.Fatalf("connections %v, want 3: %s", n, httpStats)
	}

	for _, path := range []string{"/health", "/ready"} {
		var st struct{ Status string }
		if p.decode(t, http.StatusOK, "GET", path, "", "", nil, &st); st.Status != "ok" {
			t.Fatalf("GET %s: %+v", path, st)
		}
	}

	// The release hands the lock to the TCP client, in FIFO order.
	p.decode(t, http.StatusNoContent, "POST", "/v1/locks/job/release", sid, "", map[string]string{"token": g.Token}, nil)
	f := strings.Fields(waiter.reply())
	if len(f) != 3 || f[0] != "ok" || f[1] <= g.Token || f[2] != "33" {
		t.Fatalf("the TCP waiter after the HTTP release: %q, want a grant with a token after %s", f, g.Token)
	}

	after := p.scrape(t, "")
	if d := metricValue(after, "dflockd_grants_total") - metricValue(before, "dflockd_grants_total"); d != 2 {
		t.Errorf("dflockd_grants_total moved by %v over the HTTP and the TCP grant, want 2", d)
	}
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"dflockd_connections", nil, 3},
		{"dflockd_http_sessions", nil, 1},
		{"dflockd_transport_connections", []string{"transport", "tcp"}, 2},
		{"dflockd_transport_connections", []string{"transport", "http"}, 1},
		{"dflockd_locks_held", nil, 1},
		{"dflockd_ready", nil, 1},
		// The TCP transport counts requests for /metrics.
		{"dflockd_requests_total", []string{"command", "stats"}, 1},
		{"dflockd_requests_total", []string{"command", "l"}, 1},
	} {
		if got := metricValue(after, m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	if got := metricValue(after, "dflockd_http_requests_total", "path", "/v1/locks/{key}", "status", "200"); got != 1 {
		t.Errorf("dflockd_http_requests_total for the acquire = %v, want 1", got)
	}
}

// SIGTERM drains: /ready answers 503 draining while a TCP connection is
// still open, new sessions and lock calls are refused, the session's
// lock is released when the API shuts down, and the process exits 0.
func TestHTTPDrainOnSIGTERM(t *testing.T) {
	p := startHTTPProc(t)
	sid := p.newSession(t, "")
	var g grantReply
	p.decode(t, http.StatusOK, "POST", "/v1/locks/job", sid, "", map[string]int{"acquire_timeout_s": 0}, &g)
	tcp := dialLine(t, p.addr) // keeps the drain going until it leaves
	if got := tcp.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping: %q", got)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/ready to answer 503", func() bool {
		code, _ := p.call(t, "GET", "/ready", "", "", nil)
		return code == http.StatusServiceUnavailable
	})
	code, b := p.call(t, "GET", "/ready", "", "", nil)
	if code != http.StatusServiceUnavailable || strings.TrimSpace(string(b)) != `{"status":"draining"}` {
		t.Fatalf("GET /ready while draining: %d %s", code, b)
	}
	refused := func(what string, code int, b []byte) {
		t.Helper()
		var e struct{ Error string }
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusServiceUnavailable || e.Error != "draining" {
			t.Errorf("%s while draining: %d %s, want 503 draining", what, code, b)
		}
	}
	code, b = p.call(t, "POST", "/v1/sessions", "", "", nil)
	refused("a new session", code, b)
	code, b = p.call(t, "POST", "/v1/locks/other", sid, "", map[string]int{"acquire_timeout_s": 0})
	refused("an acquire", code, b)
	if fams := p.scrape(t, ""); metricValue(fams, "dflockd_ready") != 0 {
		t.Errorf("dflockd_ready = %v while draining, want 0", metricValue(fams, "dflockd_ready"))
	}
	// The last TCP request is refused and its connection closed: the
	// drain ends, the HTTP API shuts down, the process exits 0.
	if got := tcp.do("ping", "_", "_"); got != "error_draining" {
		t.Fatalf("a TCP request while draining: %q", got)
	}
	if err := exitWithin(t, p.cmd, 10*time.Second, "its last TCP connection ended"); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if log := p.log.String(); !strings.Contains(log, "msg=stopped") || strings.Contains(log, "level=ERROR") {
		t.Fatalf("want a clean stop:\n%s", log)
	}
	if _, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://")); err == nil {
		t.Fatal("the HTTP listener is still open after the exit")
	}
}

// With --auth-token every route but /health, /ready and the OpenAPI
// document wants the Bearer token (spec §F.2).
func TestHTTPAuthProcess(t *testing.T) {
	p := startHTTPProc(t, "--auth-token", "s3cret")
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"POST", "/v1/sessions", "", http.StatusUnauthorized},
		{"POST", "/v1/sessions", "guess", http.StatusUnauthorized},
		{"GET", "/v1/stats", "", http.StatusUnauthorized},
		{"GET", "/metrics", "", http.StatusUnauthorized},
		{"GET", "/health", "", http.StatusOK},
		{"GET", "/ready", "", http.StatusOK},
		{"GET", "/v1/openapi.json", "", http.StatusOK},
		{"GET", "/v1/stats", "s3cret", http.StatusOK},
	} {
		code, b := p.call(t, c.method, c.path, "", c.token, nil)
		if code != c.want {
			t.Errorf("%s %s with token %q: %d %s, want %d", c.method, c.path, c.token, code, b, c.want)
		}
		var e struct{ Error string }
		if c.want == http.StatusUnauthorized && (json.Unmarshal(b, &e) != nil || e.Error != "unauthorized") {
			t.Errorf("%s %s: body %s, want the unauthorized error", c.method, c.path, b)
		}
	}
	sid := p.newSession(t, "s3cret")
	var g grantReply
	p.decode(t, http.StatusOK, "POST", "/v1/locks/job", sid, "s3cret", map[string]int{"acquire_timeout_s": 0}, &g)
	// The same token on the line protocol.
	c := dialLine(t, p.addr)
	if got := c.do("auth", "_", "s3cret"); got != "ok" {
		t.Fatalf("TCP auth: %q", got)
	}
	if got := c.do("l", "job", "0"); got != "timeout" {
		t.Fatalf("TCP try-lock of the key the HTTP session holds: %q", got)
	}
}

// With --tls-cert the HTTP API speaks HTTPS with the certificate of the
// line protocol's listener, and SIGHUP reloads it for both.
func TestHTTPOverTLS(t *testing.T) {
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	p := startTLSProc(t, "--http-port", httpPort)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: certtest.ClientConfig(p.ca.Pool)}}
	defer hc.CloseIdleConnections()
	get := func(path string) (*http.Response, []byte) {
		t.Helper()
		resp, err := hc.Get("https://" + httpAddr + path)
		if err != nil {
			t.Fatalf("GET https://%s%s: %v", httpAddr, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("/health")
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Fatalf("GET /health over HTTPS: %d %s (TLS %v)", resp.StatusCode, b, resp.TLS != nil)
	}
	line := dialTLS(t, p.addr, p.ca.Pool)
	if got, want := resp.TLS.PeerCertificates[0].SerialNumber, line.serial(); got.Cmp(want) != 0 {
		t.Fatalf("HTTPS certificate %v, the TCP listener's %v", got, want)
	}
	// A TLS lock is visible over HTTPS: one engine.
	line.token(line.do("l", "job", "0 60"))
	if _, b := get("/v1/stats"); !strings.Contains(string(b), `"key":"job"`) {
		t.Fatalf("GET /v1/stats over HTTPS: %s", b)
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + httpAddr + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP got 200 from the HTTPS listener")
		}
	}

	second := p.ca.Leaf(t, "second")
	certtest.WriteFile(t, p.certFile, second.CertPEM)
	certtest.WriteFile(t, p.keyFile, second.KeyPEM)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "TLS certificate reloaded")
	hc.CloseIdleConnections() // a new connection, a new handshake
	if resp, _ := get("/health"); resp.TLS.PeerCertificates[0].SerialNumber.Cmp(second.Cert.SerialNumber) != 0 {
		t.Fatalf("after SIGHUP HTTPS serves certificate %v, want %v", resp.TLS.PeerCertificates[0].SerialNumber, second.Cert.SerialNumber)
	}
	if _, err := tls.Dial("tcp", httpAddr, &tls.Config{RootCAs: certtest.NewCA(t, "another CA").Pool}); err == nil {
		t.Fatal("a client trusting another CA completed an HTTPS handshake")
	}
}

// What cannot be served stops startup: the HTTP port on --port's (exit
// 2), a TLS key without its certificate (exit 2), a port in use (exit 1,
// nothing says listening). Each run is bounded: a server that started
// instead would be killed and reported.
func TestHTTPStartupErrors(t *testing.T) {
	bin := binary(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--port", "7390", "--http-port", "7390"}, "--http-port (DFLOCKD_HTTP_PORT) must differ from --port"},
		{[]string{"--port", "0", "--http-port", "7391", "--tls-key", "k.pem"}, "--tls-cert"},
	} {
		out, err := exitingCommand(t, bin, c.args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: %v\n%s\nwant exit 2 and %q", c.args, err, out, c.want)
		}
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	port := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--port", "0", "--http-port", port}, &stdout, &stderr); code != 1 {
		t.Fatalf("--http-port on a port in use: exit %d, want 1:\n%s", code, &stderr)
	}
	if log := stderr.String(); !strings.Contains(log, "address already in use") || !strings.Contains(log, "127.0.0.1:"+port) ||
		strings.Contains(log, "listening") {
		t.Fatalf("--http-port on a port in use:\n%s", log)
	}
}

// /v1/stats follows --compat as the TCP stats command does: under rf the
// document has that line's every array (counters, KV entries, lists...).
func TestHTTPStatsFollowsCompat(t *testing.T) {
	p := startHTTPProc(t, "--compat", "rf")
	c := dialLine(t, p.addr)
	if got := c.do("incr", "visits", "1"); got != "ok 1" {
		t.Fatalf("incr: %q", got)
	}
	tcpStats, ok := strings.CutPrefix(c.do("stats", "_", "_"), "ok ")
	if !ok {
		t.Fatalf("TCP stats: %q", tcpStats)
	}
	code, httpStats := p.call(t, "GET", "/v1/stats", "", "", nil)
	if code != http.StatusOK {
		t.Fatalf("GET /v1/stats: %d %s", code, httpStats)
	}
	doc := statsShape(t, httpStats)
	if !reflect.DeepEqual(statsShape(t, []byte(tcpStats)), doc) {
		t.Fatalf("GET /v1/stats = %s\nTCP stats     = %s", httpStats, tcpStats)
	}
	if counters, _ := doc["counters"].([]any); len(counters) != 1 {
		t.Fatalf("the rf document's counters: %s", httpStats)
	}
}

// The HTTP API on a non-loopback --http-host makes the server reachable
// from the network even with --host on loopback: the startup warnings
// name its caps left at 0 too; on loopback there is nothing to warn of.
func TestHTTPStartupWarnings(t *testing.T) {
	warnings := func(cfg Config) string {
		var b bytes.Buffer
		warnUnbounded(slog.New(slog.NewTextHandler(&b, nil)), cfg)
		return b.String()
	}
	cfg := DefaultConfig()
	cfg.HTTP.Port = 6389
	if got := warnings(cfg); got != "" {
		t.Errorf("loopback only, HTTP on: %s", got)
	}
	cfg.HTTP.Host = "0.0.0.0"
	cfg.HTTP.MaxSessions = 100
	got := warnings(cfg)
	for _, want := range []string{"no auth token", "host=0.0.0.0", "flag=--max-waiters", "flag=--http-max-sessions-per-ip",
		"flag=--http-max-connections-per-ip", "flag=--http-rate-limit-per-ip"} {
		if !strings.Contains(got, want) {
			t.Errorf("HTTP on 0.0.0.0: no %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "flag=--http-max-sessions ") {
		t.Errorf("a warning about --http-max-sessions, which is set:\n%s", got)
	}
	cfg.HTTP.Port = 0
	if got := warnings(cfg); got != "" {
		t.Errorf("HTTP off, --http-host inert: %s", got)
	}
}
