package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Every client transport on cluster member processes (issue #20): the
// line protocol, godistlock and the HTTP API on the leader, all through
// the replicated log, and a follower's with --cluster-forward.

// gdMember is a cluster member process with an HTTP API and a
// godistlock listener.
type gdMember struct {
	*httpMember
	gd string // host:port of its godistlock listener
}

// startTransportMembers runs a 3-member cluster, every member with
// --http-port, --godistlock-port, --cluster-forward and extra.
func startTransportMembers(t *testing.T, extra ...string) []*gdMember {
	t.Helper()
	var ms []*gdMember
	var peers []string
	for i := range 3 {
		m := &gdMember{httpMember: &httpMember{member: &member{t: t, id: fmt.Sprint("n", i+1), client: freeAddr(t)},
			http: freeAddr(t)}, gd: freeAddr(t)}
		raft := freeAddr(t)
		_, gdPort, _ := net.SplitHostPort(m.gd)
		peers = append(peers, fmt.Sprintf("%s=%s@%s", m.id, raft, m.client))
		m.args = append([]string{"--raft-addr", raft, "--cluster-bootstrap", "--godistlock-port", gdPort, "--cluster-forward"},
			extra...)
		ms = append(ms, m)
	}
	dir := t.TempDir()
	for _, m := range ms {
		m.args = append(memberArgs(m.httpMember, dir, strings.Join(peers, ",")), m.args...)
		m.start()
	}
	return ms
}

// gdConn is a godistlock connection.
type gdConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialGodistlock(t *testing.T, addr string) *gdConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &gdConn{t: t, c: c, r: bufio.NewReader(c)}
}

func (g *gdConn) send(line string) {
	g.t.Helper()
	_ = g.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(g.c, line+"\n"); err != nil {
		g.t.Fatalf("%s: %v", line, err)
	}
}

func (g *gdConn) do(line string) string {
	g.t.Helper()
	g.send(line)
	_ = g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := g.r.ReadString('\n')
	if err != nil {
		g.t.Fatalf("%s: %v", line, err)
	}
	return strings.TrimSuffix(got, "\n")
}

// closed reports whether the server ends the connection (EOF or a reset)
// with nothing more to read, within 10 s.
func (g *gdConn) closed() bool {
	_ = g.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := g.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// gdFence is the fence of "<word> <nonce> <fence>".
func gdFence(t *testing.T, got, word, nonce string) uint64 {
	t.Helper()
	f := strings.Fields(got)
	if len(f) != 3 || f[0] != word || f[1] != nonce {
		t.Fatalf("%q, want %s %s <fence>", got, word, nonce)
	}
	n, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	return n
}

// httpLock takes key over HTTP on m with a new session: its session and
// the grant's token, or a failure's answer.
func httpLock(m *httpMember, key string, wait int) (sid, token, status string, a *httpAnswer) {
	a = m.call("POST", "/v1/sessions", "", nil)
	var s struct {
		SessionID string `json:"session_id"`
	}
	if a.status != 200 || json.Unmarshal(a.body, &s) != nil {
		return "", "", "", a
	}
	a = m.call("POST", "/v1/locks/"+key, s.SessionID, map[string]int{"acquire_timeout_s": wait, "lease_ttl_s": 60})
	var g struct{ Status, Token string }
	if a.status != 200 || json.Unmarshal(a.body, &g) != nil {
		return s.SessionID, "", "", a
	}
	return s.SessionID, g.Token, g.Status, a
}

// TestClusterEveryTransport: on the leader of a 3-member cluster, a lock
// taken over each transport — the line protocol, godistlock, the HTTP API
// — is seen held by the other two (a try-lock is refused; godistlock's
// IS names the holder's fence, whichever protocol took it) and released;
// through a follower with --cluster-forward, the line protocol is relayed
// to the leader and takes a lock the leader sees held, and godistlock and
// HTTP, which are not relayed, answer not_leader (ERR and a close; 503
// naming the leader). Members serve their TCP clients (godistlock's too)
// on the gnet loops (the default), and with --cluster-loops=false with
// netconn.
func TestClusterEveryTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, seconds")
	}
	t.Run("netconn", func(t *testing.T) { testEveryTransport(t, "--cluster-loops=false") })
	t.Run("loops", func(t *testing.T) { testEveryTransport(t) })
}

func testEveryTransport(t *testing.T, extra ...string) {
	ms := startTransportMembers(t, extra...)
	var hs []*httpMember
	for _, m := range ms {
		hs = append(hs, m.httpMember)
	}
	var l *gdMember
	within(t, 15*time.Second, "a leader answering a godistlock TRY", func() (bool, string) {
		lh := httpLeader(t, hs)
		for _, m := range ms {
			if m.httpMember == lh {
				l = m
			}
		}
		// The leader's godistlock listener answers through the log.
		got := dialGodistlock(t, l.gd).do("TRY probe 1000 p1")
		return strings.HasPrefix(got, "GIVE p1 "), "TRY on " + l.id + ": " + got
	})
	// What serves the leader's plain-TCP clients, seen from outside: the
	// goroutines it runs for 100 more connections.
	perConn := goroutinesPerConnection(t, l.httpMember, 100)
	if slices.Contains(extra, "--cluster-loops=false") {
		if perConn < 0.8 { // one each, give or take the member's own
			t.Fatalf("netconn: %.2f goroutines per connection, want one each", perConn)
		}
	} else if perConn > 0.2 {
		t.Fatalf("loops: %.2f goroutines per connection, want none (the gnet loops serve them)", perConn)
	}
	t.Logf("100 connections to the leader: %.2f goroutines each", perConn)

	gd := dialGodistlock(t, l.gd)
	if got := gd.do("HELLO 1 h1"); !strings.HasPrefix(got, "HELLO h1 ") {
		t.Fatalf("HELLO: %q", got)
	}

	// A godistlock client that half-closes after its requests gets
	// every answer, then the close, which releases what it took.
	h := dialGodistlock(t, l.gd)
	if _, err := io.WriteString(h.c, "TRY half 60000 x1\nIS half x2\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(h.r)
	if err != nil {
		t.Fatalf("after a half-close: %q, %v", rest, err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n"); len(lines) != 2 ||
		lines[1] != fmt.Sprintf("LOCK x2 %d", gdFence(t, lines[0], "GIVE", "x1")) {
		t.Fatalf("after a half-close: %q, want GIVE x1 <fence> and LOCK x2 <fence>, then the close", rest)
	}
	if got := gd.do("IS half g0"); got != "NO g0" {
		t.Fatalf("IS after the half-closed client left: %q, want NO g0", got)
	}

	// The line protocol on the leader.
	tcp := dialMember(t, l.member)
	grant := tcp.do("l", "via-tcp", "0 60", 10*time.Second)
	f := grantFence(t, grant)
	if got, want := gd.do("IS via-tcp g1"), fmt.Sprintf("LOCK g1 %d", f); got != want {
		t.Fatalf("godistlock IS of the TCP lock: %q, want %q", got, want)
	}
	if got := gd.do("TRY via-tcp 1000 g2"); got != "NO g2" {
		t.Fatalf("godistlock TRY of the TCP lock: %q, want NO g2", got)
	}
	if _, _, status, a := httpLock(l.httpMember, "via-tcp", 0); status != "timeout" {
		t.Fatalf("HTTP try-lock of the TCP lock: %s, want status timeout", a)
	}
	if got := tcp.do("r", "via-tcp", strings.Fields(grant)[1], 10*time.Second); got != "ok" {
		t.Fatalf("TCP release: %q", got)
	}
	if got := gd.do("IS via-tcp g3"); got != "NO g3" {
		t.Fatalf("godistlock IS after the TCP release: %q, want NO g3", got)
	}

	// godistlock on the leader.
	f = gdFence(t, gd.do("ON via-gd 60000 g4"), "GIVE", "g4")
	if got := tcp.do("l", "via-gd", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("TCP try-lock of the godistlock lock: %q, want timeout", got)
	}
	if _, _, status, a := httpLock(l.httpMember, "via-gd", 0); status != "timeout" {
		t.Fatalf("HTTP try-lock of the godistlock lock: %s, want status timeout", a)
	}
	if got, want := gd.do(fmt.Sprintf("REFRESH via-gd %d 60000 g5", f)), fmt.Sprintf("GIVE g5 %d", f); got != want {
		t.Fatalf("godistlock REFRESH: %q, want %q", got, want)
	}
	gd.send("OFF via-gd g6") // no reply; what follows is answered after it
	if got := gd.do("IS via-gd g7"); got != "NO g7" {
		t.Fatalf("godistlock IS after OFF: %q, want NO g7", got)
	}
	if got := tcp.do("l", "via-gd", "0 60", 10*time.Second); grantFence(t, got) <= f {
		t.Fatalf("TCP lock after the godistlock release: %q, want a fence above %d", got, f)
	}

	// The HTTP API on the leader.
	sid, token, status, a := httpLock(l.httpMember, "via-http", 0)
	if status != "ok" {
		t.Fatalf("HTTP lock: %s", a)
	}
	gdFence(t, gd.do("IS via-http g8"), "LOCK", "g8")
	if got := tcp.do("l", "via-http", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("TCP try-lock of the HTTP lock: %q, want timeout", got)
	}
	if a := l.call("POST", "/v1/locks/via-http/release", sid, map[string]string{"token": token}); a.status != 204 {
		t.Fatalf("HTTP release: %s", a)
	}
	if got := gd.do("IS via-http g9"); got != "NO g9" {
		t.Fatalf("godistlock IS after the HTTP release: %q, want NO g9", got)
	}

	// Through a follower with --cluster-forward.
	var fw *gdMember
	for _, m := range ms {
		if m != l {
			fw = m
			break
		}
	}
	ft := dialMember(t, fw.member)
	grant = ft.do("l", "via-follower", "0 60", 15*time.Second) // relayed once the follower knows the leader
	f = grantFence(t, grant)
	if runtime.GOOS == "linux" {
		var all []*member
		for _, m := range ms {
			all = append(all, m.member)
		}
		if to := relaysTo(t, fw.member, all); to != l.member {
			t.Fatalf("%s's client is not relayed to the leader %s", fw.id, l.id)
		}
	}
	if got, want := gd.do("IS via-follower g10"), fmt.Sprintf("LOCK g10 %d", f); got != want {
		t.Fatalf("the leader's godistlock IS of the lock taken through %s: %q, want %q", fw.id, got, want)
	}
	if got := tcp.do("l", "via-follower", "0", 10*time.Second); got != "timeout" {
		t.Fatalf("the leader's TCP try-lock of the lock taken through %s: %q, want timeout", fw.id, got)
	}
	if got := ft.do("r", "via-follower", strings.Fields(grant)[1], 10*time.Second); got != "ok" {
		t.Fatalf("release through %s: %q", fw.id, got)
	}
	if got := gd.do("IS via-follower g11"); got != "NO g11" {
		t.Fatalf("the leader's godistlock IS after the release through %s: %q, want NO g11", fw.id, got)
	}
	// godistlock and HTTP on the follower are not relayed: the nearest
	// error of each protocol.
	fg := dialGodistlock(t, fw.gd)
	if got := fg.do("ON via-follower 60000 f1"); got != "ERR f1 not_leader" {
		t.Fatalf("godistlock ON on follower %s: %q, want ERR f1 not_leader", fw.id, got)
	}
	if !fg.closed() {
		t.Fatalf("follower %s kept the godistlock connection open after ERR", fw.id)
	}
	if a := fw.call("POST", "/v1/sessions", "", nil); a.status != 503 || a.header.Get("X-Dflockd-Leader") != l.client {
		t.Fatalf("HTTP on follower %s: %s, X-Dflockd-Leader %q, want 503 naming %s", fw.id, a,
			a.header.Get("X-Dflockd-Leader"), l.client)
	}
}

// memberGoroutines is go_goroutines on m's /metrics.
func memberGoroutines(t *testing.T, m *httpMember) float64 {
	t.Helper()
	resp, err := http.Get("http://" + m.http + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("%s /metrics: %v", m.id, err)
	}
	n := metricValue(fams, "go_goroutines")
	if n < 0 {
		t.Fatalf("%s /metrics has no go_goroutines", m.id)
	}
	return n
}

// goroutinesPerConnection opens n connections to m's client port, each
// answered a ping, and reports how many goroutines m gained with them:
// netconn runs one per connection (and a writer while it writes), the
// gnet loops none.
func goroutinesPerConnection(t *testing.T, m *httpMember, n int) float64 {
	t.Helper()
	before := memberGoroutines(t, m)
	for range n {
		if got := dialMember(t, m.member).do("ping", "_", "_", 10*time.Second); got != "ok" {
			t.Fatalf("ping on %s: %q", m.id, got)
		}
	}
	return (memberGoroutines(t, m) - before) / float64(n)
}
