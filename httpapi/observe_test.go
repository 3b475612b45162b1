package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/dflockd-ng/dflockd/internal/ratelog"
)

// logBuffer is a JSON slog logger's output, safe to read while the
// server writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// lines are the log's lines whose msg is msg, parsed.
func (l *logBuffer) lines(t testing.TB, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// Every 401 is logged, bearer and admin alike, with the client's
// address, the method and the path, and never the token or the query.
func TestUnauthorizedLogged(t *testing.T) {
	var log logBuffer
	ts := newServer(t, setup{cfg: Config{AuthToken: "right-token", AdminToken: "admin-token",
		Events: ratelog.New(log.logger(), 1000, 1000)}})
	expect(t, "stats with a wrong token", ts.send(req{method: "GET", path: "/v1/stats?token=query-secret",
		header: map[string]string{"Authorization": "Bearer wrong-secret"}}), 401, codeUnauthorized)
	expect(t, "stats without a token", ts.send(req{method: "GET", path: "/v1/stats"}), 401, codeUnauthorized)
	expect(t, "an admin call with a wrong admin token", ts.send(req{method: "DELETE", path: "/v1/admin/voters/n2",
		header: map[string]string{"Authorization": "Bearer right-token", "X-Dflockd-Admin": "wrong-admin"}}),
		401, codeUnauthorized)
	expect(t, "stats with the token", ts.send(req{method: "GET", path: "/v1/stats",
		header: map[string]string{"Authorization": "Bearer right-token"}}), 200, "")

	got := log.lines(t, "http request unauthorized")
	want := []map[string]any{
		{"level": "WARN", "method": "GET", "path": "/v1/stats", "credential": "bearer", "presented": true},
		{"level": "WARN", "method": "GET", "path": "/v1/stats", "credential": "bearer", "presented": false},
		{"level": "WARN", "method": "DELETE", "path": "/v1/admin/voters/n2", "credential": "admin", "presented": true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d refusals logged, want %d:\n%s", len(got), len(want), log.String())
	}
	for i, w := range want {
		for k, v := range w {
			if got[i][k] != v {
				t.Errorf("refusal %d: %s = %v, want %v", i, k, got[i][k], v)
			}
		}
		if r, _ := got[i]["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
			t.Errorf("refusal %d: remote %q, want the client's address", i, r)
		}
	}
	for _, secret := range []string{"wrong-secret", "query-secret", "wrong-admin", "right-token"} {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log shows %q:\n%s", secret, log.String())
		}
	}
}

// The access log: one line per request once answered, whatever answered
// it, with its method, path, status, body size, duration and client.
func TestAccessLog(t *testing.T) {
	var log logBuffer
	ts := newServer(t, setup{noMetrics: true, cfg: Config{AccessLog: log.logger(), AuthToken: "tok-secret"}})
	bearer := map[string]string{"Authorization": "Bearer tok-secret"}
	health := ts.send(req{method: "GET", path: "/health"})
	missing := ts.send(req{method: "GET", path: "/nowhere?q=1", header: bearer})
	refused := ts.send(req{method: "POST", path: "/v1/sessions"})
	expect(t, "health", health, 200, "")
	expect(t, "an unknown route", missing, 404, codeNotFound)
	expect(t, "a session without the token", refused, 401, codeUnauthorized)

	// A line is written once the handler returns, which may be after the
	// client has its answer.
	var got []map[string]any
	eventually(t, "three access log lines", func() bool {
		got = log.lines(t, "http request")
		return len(got) >= 3
	})
	want := []struct {
		method, path string
		status       int
		body         []byte
	}{
		{"GET", "/health", 200, health.body},
		{"GET", "/nowhere", 404, missing.body},
		{"POST", "/v1/sessions", 401, refused.body},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), log.String())
	}
	// By path: the client may send the next request on another
	// connection before the last line is written.
	byPath := map[any]map[string]any{}
	for _, g := range got {
		byPath[g["path"]] = g
	}
	for i, w := range want {
		g := byPath[w.path]
		if g["level"] != "INFO" || g["method"] != w.method || g["path"] != w.path ||
			g["status"] != float64(w.status) || g["bytes"] != float64(len(w.body)) {
			t.Errorf("line %d: %v, want %s %s %d with %d bytes", i, g, w.method, w.path, w.status, len(w.body))
		}
		if d, ok := g["duration"].(float64); !ok || d < 0 {
			t.Errorf("line %d: duration %v", i, g["duration"])
		}
		if r, _ := g["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
			t.Errorf("line %d: remote %q", i, r)
		}
	}
	if strings.Contains(log.String(), "tok-secret") {
		t.Errorf("the access log shows the token:\n%s", log.String())
	}
}
