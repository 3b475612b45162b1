package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// A request whose body stops arriving: it declares 1000 bytes and sends
// one. The answers are read on a raw connection, under a deadline that
// only a stuck server runs out.

// stalledBody sends method path with headers, declaring a body of 1000
// bytes of which it sends one, and returns the answer and whether the
// server then closed the connection.
func stalledBody(t *testing.T, addr, method, path string, header map[string]string) (*http.Response, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n")
	for k, v := range header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n{")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(c)
	resp, err := http.ReadResponse(rd, nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s %s with a stalled body: no answer", method, path)
	}
	if err != nil {
		t.Fatalf("%s %s with a stalled body: %v", method, path, err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, path, err)
	}
	resp.Body.Close()
	_, err = rd.ReadByte()
	return resp, err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestBodyReadDeadline: a body that does not come whole within
// Config.BodyReadTimeout ends its request, whether the handler reads it
// (400) or not (net/http's own read of what is left), and the connection
// closes.
func TestBodyReadDeadline(t *testing.T) {
	ts := newServer(t, setup{cfg: Config{AuthToken: "tok", BodyReadTimeout: 50 * time.Millisecond}})
	auth := map[string]string{"Authorization": "Bearer tok"}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/v1/sessions", http.StatusBadRequest},             // reads its body
		{"POST", "/v1/locks/k", http.StatusBadRequest},              // no session: answered before the body
		{"GET", "/v1/stats", http.StatusOK},                         // no body expected
		{"POST", "/v1/no-such-route", http.StatusNotFound},          // no route
		{"DELETE", "/v1/sessions/x", http.StatusBadRequest},         // a bad id
		{"POST", "/v1/signals/ch", http.StatusBadRequest},           // reads its body
		{"POST", "/v1/admin/voters", http.StatusServiceUnavailable}, // no admin token
	} {
		resp, closed := stalledBody(t, ts.addr, c.method, c.path, auth)
		if resp.StatusCode != c.status {
			t.Errorf("%s %s with a stalled body: %s, want %d", c.method, c.path, resp.Status, c.status)
		}
		if !closed {
			t.Errorf("%s %s with a stalled body: the connection stays open", c.method, c.path)
		}
	}
}

// TestRefusedBodyIsNotRead: a request that fails authentication is
// answered 401 and its connection closed without its body: the body
// deadline here is an hour, which the answer does not wait for.
func TestRefusedBodyIsNotRead(t *testing.T) {
	ts := newServer(t, setup{cfg: Config{AuthToken: "tok", AdminToken: "adm", BodyReadTimeout: time.Hour}})
	for _, c := range []struct {
		path   string
		header map[string]string
	}{
		{"/v1/sessions", nil},
		{"/v1/locks/k", map[string]string{"Authorization": "Bearer wrong"}},
		{"/v1/admin/locks/k/release", map[string]string{"Authorization": "Bearer tok", "X-Dflockd-Admin": "wrong"}},
	} {
		resp, closed := stalledBody(t, ts.addr, "POST", c.path, c.header)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s unauthorized, with a stalled body: %s, want 401", c.path, resp.Status)
		}
		if !closed {
			t.Errorf("POST %s unauthorized, with a stalled body: the connection stays open", c.path)
		}
	}
	// A refused request without a body keeps its connection.
	r := ts.send(req{method: "GET", path: "/v1/stats"})
	expect(t, "GET /v1/stats without the token", r, http.StatusUnauthorized, codeUnauthorized)
	if r.header.Get("Connection") == "close" {
		t.Error("a 401 without a body closes its connection")
	}
}
