package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// --http-sse-ping-interval sets the SSE keep-alive period (GET
// /v1/signals, /v1/events): 15 s by default, 0 for none, negative refused.
func TestConfigSSEPingInterval(t *testing.T) {
	if c, _ := mustLoad(t, nil, nil); c.HTTP.SSEPingInterval != 15*time.Second {
		t.Errorf("default %v, want 15s", c.HTTP.SSEPingInterval)
	}
	if c, _ := mustLoad(t, []string{"--http-port=6389", "--http-sse-ping-interval=3"}, nil); c.HTTP.SSEPingInterval != 3*time.Second {
		t.Errorf("--http-sse-ping-interval=3: %v", c.HTTP.SSEPingInterval)
	}
	if c, _ := mustLoad(t, nil, map[string]string{"DFLOCKD_HTTP_SSE_PING_S": "0"}); c.HTTP.SSEPingInterval != 0 {
		t.Errorf("DFLOCKD_HTTP_SSE_PING_S=0: %v", c.HTTP.SSEPingInterval)
	}
	wantErr(t, []string{"--http-sse-ping-interval=-1"}, nil, "--http-sse-ping-interval")
}

// The binary serves GET /v1/signals with its pings at the interval set:
// a ping comes, then a signal sent over TCP arrives on the stream.
func TestSignalStreamProcess(t *testing.T) {
	p := startHTTPProc(t, "--http-sse-ping-interval", "1")
	// Bounds every read below, and is under the default interval (15 s):
	// a ping within it is the flag's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", p.base+"/v1/signals?pattern=jobs.*", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /v1/signals: %d %s", resp.StatusCode, resp.Header)
	}
	rd := bufio.NewReader(resp.Body)
	until := func(want string) string {
		t.Helper()
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream, waiting for %q: %v", want, err)
			}
			if strings.HasPrefix(line, want) {
				return strings.TrimSuffix(line, "\n")
			}
		}
	}
	until(": ping")
	if got := dialLine(t, p.addr).do("signal", "jobs.build", "done"); got != "ok 1" {
		t.Fatalf("signal: %q, want ok 1", got)
	}
	until("event: sig")
	if data := until("data: "); data != `data: {"channel":"jobs.build","payload":"done"}` {
		t.Fatalf("the signal's data: %q", data)
	}
}
