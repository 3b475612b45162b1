package httpapi

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Auth, the rate limit, the caps per client address, CORS and TLS.

func TestAuth(t *testing.T) {
	const token = "s3cret-token"
	bearer := func(v string) map[string]string { return map[string]string{"Authorization": v} }

	// The delay, on a clock only the test moves: a refusal waits until
	// that clock has passed authFailDelay, however long that takes in
	// real time, and an authorized request does not wait at all: it is
	// answered while the clock stands still. Nothing here depends on how
	// fast the machine is.
	fs := newServer(t, setup{fake: true, cfg: Config{AuthToken: token}})
	var failures []<-chan *reply
	for _, h := range []map[string]string{nil, bearer("Bearer wrong"), bearer("Bearer " + token + "x"),
		bearer("Basic " + token), bearer(token), bearer("Bearer")} {
		failures = append(failures, async(func() *reply {
			return fs.send(req{method: "POST", path: "/v1/sessions", header: h})
		}))
	}
	// Each refusal waits on a node of the API's timer wheel.
	eventually(t, "the six refusals to wait", func() bool { return fs.apiTimers() == len(failures) })
	// The scheme is case-insensitive; blanks around the token do not
	// count. (await bounds the wait: a delayed request would never be
	// answered on this clock.)
	for _, h := range []string{"Bearer " + token, "bearer " + token, "BEARER  " + token + " "} {
		r := await(t, "an authorized request, the clock standing still", async(func() *reply {
			return fs.send(req{method: "POST", path: "/v1/sessions", header: bearer(h)})
		}))
		expect(t, "create with "+h, r, 200, "")
	}
	armed := fs.apiTimers() // the refusals' alarms and the new sessions' expiries
	fs.advance((authFailDelay - 1) * time.Millisecond)
	if n := fs.apiTimers(); n != armed {
		t.Fatalf("%d of the API's timers fired %d ms into the %d ms delay", armed-n, authFailDelay-1, authFailDelay)
	}
	for _, f := range failures {
		select {
		case r := <-f:
			t.Fatalf("a refusal answered %d before its delay", r.status)
		default:
		}
	}
	fs.advance(time.Millisecond)
	for _, f := range failures {
		r := await(t, "a 401", f)
		expect(t, "create with a wrong token", r, 401, codeUnauthorized)
		if r.header.Get("WWW-Authenticate") == "" {
			t.Error("a 401 without WWW-Authenticate")
		}
	}

	// The rest on the real clock.
	ts := newServer(t, setup{cfg: Config{AuthToken: token}})
	// Exempt: the probes and the document.
	for _, p := range []string{"/health", "/ready", "/v1/openapi.json"} {
		expect(t, p+" without a token", ts.send(req{method: "GET", path: p}), 200, "")
	}
	// Everything else is not, unknown routes included.
	for _, p := range []string{"/v1/stats", "/metrics", "/nowhere"} {
		expect(t, p+" without a token", ts.send(req{method: "GET", path: p}), 401, codeUnauthorized)
	}
	expect(t, "stats with the token", ts.send(req{method: "GET", path: "/v1/stats", header: bearer("Bearer " + token)}), 200, "")
	sid := func() string {
		r := ts.send(req{method: "POST", path: "/v1/sessions", header: bearer("Bearer " + token)})
		var s sessionReply
		r.decode(t, &s)
		return s.SessionID
	}()
	expect(t, "a lock call without the token", ts.send(req{method: "POST", path: "/v1/locks/k", body: "{}", session: sid}), 401, codeUnauthorized)
	if _, held := ts.lockStat("k"); held {
		t.Fatal("an unauthorized call reached the engine")
	}
}

// apiTimers is how many nodes the API's timer wheel holds.
func (ts *testServer) apiTimers() int {
	return ts.api.timers.Len()
}

func TestRateLimit(t *testing.T) {
	// A bucket of 2 refilled at 1 per 100 s: the third request in a row
	// is over, whatever the machine's speed.
	ts := newServer(t, setup{cfg: Config{RateLimitPerIP: 0.01, RateLimitBurst: 2}})
	expect(t, "first", ts.send(req{method: "GET", path: "/v1/stats"}), 200, "")
	expect(t, "second", ts.send(req{method: "POST", path: "/v1/sessions"}), 200, "")
	expect(t, "third", ts.send(req{method: "GET", path: "/v1/stats"}), 429, codeRateLimited)
	expect(t, "an unknown route over the rate", ts.send(req{method: "GET", path: "/nowhere"}), 429, codeRateLimited)
	// The probes are exempt.
	for range 3 {
		expect(t, "health over the rate", ts.send(req{method: "GET", path: "/health"}), 200, "")
		expect(t, "ready over the rate", ts.send(req{method: "GET", path: "/ready"}), 200, "")
	}
	// Another address has a bucket of its own.
	other := ts.clientFrom(t, "127.0.0.2")
	if r := other.send(req{method: "GET", path: "/v1/stats"}); r.status != 200 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
	// The default burst is the rate, rounded up.
	if l := newRateLimiter(2.5, 0); l.burst != 3 {
		t.Fatalf("burst for 2.5/s: %d, want 3", l.burst)
	}
}

// clientFrom is ts with a client whose connections come from the local
// address ip (another loopback address: another client IP).
func (ts *testServer) clientFrom(t *testing.T, ip string) *testServer {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	probe, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("this machine cannot dial from %s: %v", ip, err)
	}
	probe.Close()
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	c := *ts
	c.tr = tr
	c.c = &http.Client{Transport: &validatingTransport{base: tr, t: t}}
	return &c
}

func TestSessionCaps(t *testing.T) {
	ts := newServer(t, setup{cfg: Config{MaxSessions: 3, MaxSessionsPerIP: 2}})
	a := ts.newSession()
	ts.newSession()
	expect(t, "a third session from one address", ts.send(req{method: "POST", path: "/v1/sessions"}), 503, codeMaxSessionsPerIP)
	other := ts.clientFrom(t, "127.0.0.2")
	other.newSession()
	expect(t, "a fourth session", other.send(req{method: "POST", path: "/v1/sessions"}), 503, codeMaxSessions)
	expect(t, "delete", ts.send(req{method: "DELETE", path: "/v1/sessions/" + a}), 204, "")
	ts.newSession() // the place is free again
	expect(t, "over the cap again", ts.send(req{method: "POST", path: "/v1/sessions"}), 503, codeMaxSessions)
}

// --http-max-connections-per-ip: a connection over the cap is closed as
// it is accepted, without an answer; its place comes back when one
// closes.
func TestConnectionsPerIP(t *testing.T) {
	ts := newServer(t, setup{cfg: Config{MaxConnectionsPerIP: 1}})
	get := func(c net.Conn) (*http.Response, error) {
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return nil, err
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Second)) // generous: a bound on an answer that never comes
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	first, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := get(first); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the first connection: %v %v", resp, err)
	}
	second, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	second.SetReadDeadline(time.Now().Add(20 * time.Second)) // generous: a bound on a close that never comes
	if n, err := second.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a connection over the cap read %d bytes, %v; want EOF (closed at once)", n, err)
	}
	second.Close()
	// Another address is not capped by this one's connection.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	third, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := get(third); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a connection from another address: %v %v", resp, err)
	}
	third.Close()
	first.Close()
	eventually(t, "the first connection's place to come back", func() bool {
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			return false
		}
		defer c.Close()
		resp, err := get(c)
		return err == nil && resp.StatusCode == 200
	})
}

// TestCORSAdminPreflight: a page with the admin token can call the admin
// routes (cluster membership, the observatory's force release): their
// preflight allows every header such a call sends.
func TestCORSAdminPreflight(t *testing.T) {
	const app = "https://app.example"
	ts := newServer(t, setup{cfg: Config{CORSAllowedOrigins: []string{app}, AuthToken: "tok", AdminToken: "adm"}})
	for _, path := range []string{"/v1/admin/voters", "/v1/admin/voters/n2", "/v1/admin/locks/k/release"} {
		r := ts.send(req{method: "OPTIONS", path: path, header: map[string]string{
			"Origin": app, "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "authorization,content-type,x-dflockd-admin"}})
		expect(t, "preflight of "+path, r, 204, "")
		allowed := map[string]bool{}
		for _, h := range strings.Split(r.header.Get("Access-Control-Allow-Headers"), ",") {
			allowed[strings.ToLower(strings.TrimSpace(h))] = true
		}
		for _, h := range []string{"authorization", "content-type", "x-dflockd-admin"} {
			if !allowed[h] {
				t.Errorf("preflight of %s: Access-Control-Allow-Headers %q lacks %s", path, r.header.Get("Access-Control-Allow-Headers"), h)
			}
		}
	}
}

func TestCORS(t *testing.T) {
	const app = "https://app.example"
	ts := newServer(t, setup{cfg: Config{CORSAllowedOrigins: []string{app}, AuthToken: "tok"}})
	preflight := func(origin, path string) *reply {
		return ts.send(req{method: "OPTIONS", path: path, header: map[string]string{
			"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-dflockd-session"}})
	}
	// A preflight carries no credentials: answered before auth.
	r := preflight(app, "/v1/locks/k")
	expect(t, "preflight", r, 204, "")
	want := map[string]string{
		"Access-Control-Allow-Origin":  app,
		"Access-Control-Allow-Methods": "GET, POST, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "Authorization, Content-Type, X-Dflockd-Session, X-Dflockd-Admin",
		"Access-Control-Max-Age":       "300",
		"Vary":                         "Origin",
	}
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			t.Errorf("preflight %s: %q, want %q", k, got, v)
		}
	}
	r = preflight("https://evil.example", "/v1/sessions")
	expect(t, "preflight from another origin", r, 204, "")
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("an origin not allowed got Access-Control-Allow-Origin %q", got)
	}
	// Actual requests carry the headers, whatever their answer.
	r = ts.send(req{method: "GET", path: "/health", header: map[string]string{"Origin": app}})
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("GET /health from the app: %d, Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	r = ts.send(req{method: "GET", path: "/v1/stats", header: map[string]string{"Origin": app}})
	if r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != app {
		t.Errorf("a 401 to the app: %d, Allow-Origin %q (the browser must see the 401)", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	if r := ts.send(req{method: "GET", path: "/health"}); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("CORS headers without an Origin")
	}
	// OPTIONS that is no preflight: a method of no route, 405 with
	// OPTIONS in Allow (CORS is on).
	r = ts.send(req{method: "OPTIONS", path: "/v1/locks/k", header: map[string]string{"Authorization": "Bearer tok"}})
	expect(t, "OPTIONS without a preflight's header", r, 405, codeMethodNotAllowed)
	if got := r.header.Get("Allow"); got != "POST, OPTIONS" {
		t.Errorf("Allow %q, want \"POST, OPTIONS\"", got)
	}

	any := newServer(t, setup{cfg: Config{CORSAllowedOrigins: []string{"*"}}})
	r = any.send(req{method: "OPTIONS", path: "/v1/stats", header: map[string]string{"Origin": "https://x.example", "Access-Control-Request-Method": "GET"}})
	if r.status != 204 || r.header.Get("Access-Control-Allow-Origin") != "*" || r.header.Get("Vary") != "" {
		t.Errorf("preflight with *: %d, Allow-Origin %q, Vary %q", r.status, r.header.Get("Access-Control-Allow-Origin"), r.header.Get("Vary"))
	}
}

func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ts := newServer(t, setup{cfg: Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}})
	ts.tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	expect(t, "GET /health over TLS", ts.send(req{method: "GET", path: "/health"}), 200, "")
	sid := ts.newSession()
	if g := ts.lock(sid, "k", 0); g.Status != "ok" {
		t.Fatalf("a lock over TLS: %+v", g)
	}
	// A plaintext client gets no HTTP answer.
	resp, err := http.Get("http://" + ts.addr + "/health")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plaintext HTTP served on a TLS listener")
		}
	}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "httpapi test"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
