package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue #34's stream lock-out, on the binary: 70 streams that never read,
// from one address, on a quiet server; a reader from another address
// must still be served, on both SSE routes.
func TestIdleStreamsDoNotLockOutOthers(t *testing.T) {
	const idle = 70
	p := startHTTPProc(t, "--observatory-events", "1024")
	addr := strings.TrimPrefix(p.base, "http://")
	open := func(from, path string) int {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial from %s: %v", from, err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil) // the head, and no more
		if err != nil {
			t.Fatalf("GET %s from %s: %v", path, from, err)
		}
		return resp.StatusCode
	}
	for _, path := range []string{"/v1/events", "/v1/signals?pattern=idle"} {
		statuses := map[int]int{}
		for i := 0; i < idle; i++ {
			statuses[open("127.0.0.1", path)]++
		}
		other := open("127.0.0.2", path)
		t.Logf("GET %s: %d idle streams from 127.0.0.1 got %d × 200, %d × 503; a reader from 127.0.0.2 got %d",
			path, idle, statuses[http.StatusOK], statuses[http.StatusServiceUnavailable], other)
		if other != http.StatusOK {
			t.Errorf("GET %s from another address, with %d idle streams open: %d, want 200", path, idle, other)
		}
	}
}
