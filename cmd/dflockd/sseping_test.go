package main

import (
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
