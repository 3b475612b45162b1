package httpapi

import (
	"strings"
	"testing"
)

// postSignal sends payload on channel with POST /v1/signals/{channel},
// expects 200, and returns delivered.
func (ts *testServer) postSignal(channel, payload string, header map[string]string) int64 {
	ts.t.Helper()
	r := ts.send(req{method: "POST", path: "/v1/signals/" + channel, body: map[string]string{"payload": payload}, header: header})
	expect(ts.t, "POST /v1/signals/"+channel, r, 200, "")
	var d deliveredReply
	r.decode(ts.t, &d)
	return d.Delivered
}

// A POSTed signal reaches a TCP listener and a GET /v1/signals stream, and
// delivered counts them both, as the line protocol's signal counts the
// same receivers.
func TestPostSignal(t *testing.T) {
	ts := newServer(t, setup{})
	addr := startTCP(t, ts)
	listener, sender := dialTCP(t, addr), dialTCP(t, addr)
	listener.send("listen", "jobs.*", "")
	if got := listener.reply(); got != "ok" {
		t.Fatalf("listen: %q", got)
	}
	lines, _ := sseLines(t, ts, "/v1/signals?pattern=jobs.>")

	if n := ts.postSignal("jobs.build", "hello world", nil); n != 2 {
		t.Fatalf("delivered %d, want 2 (the TCP listener and the stream)", n)
	}
	if got := listener.reply(); got != "sig jobs.build hello world" {
		t.Fatalf("the TCP listener got %q", got)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.build" || s.Payload != "hello world" {
		t.Fatalf("the stream got %+v", s)
	}
	// The line protocol counts the same receivers.
	sender.send("signal", "jobs.build", "tcp")
	if got := sender.reply(); got != "ok 2" {
		t.Fatalf("the TCP signal to the same channel: %q, want ok 2", got)
	}
	if got := listener.reply(); got != "sig jobs.build tcp" {
		t.Fatalf("the TCP listener got %q", got)
	}
	if s := nextSignal(t, lines); s.Payload != "tcp" {
		t.Fatalf("the stream got %+v", s)
	}
	// Only the stream's pattern matches two tokens below jobs; nobody
	// listens elsewhere. A payload is raw, as on the line protocol, up to
	// its 256-byte line.
	if n := ts.postSignal("jobs.a.b", " spaced\tout ", nil); n != 1 {
		t.Fatalf("delivered %d to jobs.a.b, want 1 (the stream)", n)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.a.b" || s.Payload != " spaced\tout " {
		t.Fatalf("the stream got %+v", s)
	}
	if n := ts.postSignal("other", strings.Repeat("p", 256), nil); n != 0 {
		t.Fatalf("delivered %d to a channel nobody listens on, want 0", n)
	}
}

// Bad requests are refused before anything is sent: the next signal each
// listener gets is the good one that follows them.
func TestPostSignalValidation(t *testing.T) {
	ts := newServer(t, setup{})
	listener := dialTCP(t, startTCP(t, ts))
	listener.send("listen", ">", "")
	if got := listener.reply(); got != "ok" {
		t.Fatalf("listen: %q", got)
	}
	long := strings.Repeat("k", 257)
	for _, c := range []struct {
		name, channel string
		body          any
	}{
		{"no body", "c", nil},
		{"an unknown field", "c", `{"payload":"x","extra":1}`},
		{"not JSON", "c", `payload=x`},
		{"two JSON values", "c", `{"payload":"x"}{"payload":"y"}`},
		{"a payload that is not a string", "c", `{"payload":5}`},
		{"no payload", "c", `{}`},
		{"an empty payload", "c", map[string]string{"payload": ""}},
		{"a payload over 256 bytes", "c", map[string]string{"payload": strings.Repeat("p", 257)}},
		{"a payload with a newline", "c", map[string]string{"payload": "a\nb"}},
		{"a payload ending in CR", "c", map[string]string{"payload": "a\r"}},
		{"a wildcard channel", "c.*", map[string]string{"payload": "x"}},
		{"a tail wildcard channel", "c.>", map[string]string{"payload": "x"}},
		{"a channel over 256 bytes", long, map[string]string{"payload": "x"}},
		{"a channel with a blank", "a%20b", map[string]string{"payload": "x"}},
	} {
		r := ts.send(req{method: "POST", path: "/v1/signals/" + c.channel, body: c.body})
		expect(t, c.name, r, 400, codeBadRequest)
	}
	r := ts.send(req{method: "GET", path: "/v1/signals/c"})
	expect(t, "GET of a channel", r, 405, codeMethodNotAllowed)
	if n := ts.postSignal("good", "x", nil); n != 1 {
		t.Fatalf("delivered %d, want 1", n)
	}
	if got := listener.reply(); got != "sig good x" {
		t.Fatalf("the listener's first signal is %q, want the good one", got)
	}
}

// With --auth-token, a POST without the token is refused and sends
// nothing; with it, it is sent.
func TestPostSignalAuth(t *testing.T) {
	const token = "s3cret-token"
	ts := newServer(t, setup{cfg: Config{AuthToken: token}})
	listener := dialTCP(t, startTCP(t, ts))
	// (The hub's own TCP token is another setting: none here.)
	listener.send("listen", "c", "")
	if got := listener.reply(); got != "ok" {
		t.Fatalf("listen: %q", got)
	}
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}} {
		r := ts.send(req{method: "POST", path: "/v1/signals/c", body: map[string]string{"payload": "refused"}, header: h})
		expect(t, "POST without the token", r, 401, codeUnauthorized)
	}
	if n := ts.postSignal("c", "allowed", map[string]string{"Authorization": "Bearer " + token}); n != 1 {
		t.Fatalf("delivered %d with the token, want 1", n)
	}
	if got := listener.reply(); got != "sig c allowed" {
		t.Fatalf("the listener's first signal is %q, want the authorized one", got)
	}
}
