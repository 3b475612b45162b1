//go:build linux

package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
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

// A stream whose reader takes nothing (it stopped reading and its socket
// is full, as a dead peer acknowledges nothing either) is cut at a
// keep-alive ping, on the binary's own listener: its address's one place
// (--http-max-streams-per-ip 1) comes back while the stream was never
// closed by its client.
func TestStreamThatTakesNothingFreesItsPlace(t *testing.T) {
	p := startHTTPProc(t, "--http-sse-ping-interval", "1", "--http-max-streams-per-ip", "1")
	addr := strings.TrimPrefix(p.base, "http://")
	pid := p.cmd.Process.Pid
	base := openFDs(t, pid)
	open := func(control func(string, string, syscall.RawConn) error) (net.Conn, int) {
		t.Helper()
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 10 * time.Second, Control: control}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /v1/signals?pattern=dead HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
		if err != nil {
			t.Fatalf("GET /v1/signals: %v", err)
		}
		return c, resp.StatusCode
	}
	tiny := func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1)
		}); err != nil {
			return err
		}
		return serr
	}
	if _, status := open(tiny); status != http.StatusOK {
		t.Fatalf("the first stream: %d", status)
	}
	// A few KiB shut its window: pings alone (13 bytes a second) would
	// take a minute.
	payload := strings.Repeat("x", 200)
	for i := 0; i < 16; i++ {
		if code, body := p.call(t, "POST", "/v1/signals/dead", "", "", map[string]string{"payload": payload}); code != http.StatusOK {
			t.Fatalf("signal %d: %d %s", i, code, body)
		}
	}
	start := time.Now()
	status := 0
	var live net.Conn
	for end := start.Add(30 * time.Second); status != http.StatusOK && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		live, status = open(nil)
		if status != http.StatusOK {
			live.Close()
		}
	}
	if status != http.StatusOK {
		t.Fatalf("the place of a stream that takes nothing never came back (last: %d)", status)
	}
	t.Logf("the place came back after %v (pings every 1 s)", time.Since(start).Round(100*time.Millisecond))
	// And its connection is closed, not kept for a next request: with
	// the live stream and the client's own connections closed, the
	// server is back to its descriptors before.
	live.Close()
	p.hc.CloseIdleConnections()
	now, closing := openFDs(t, pid), time.Now()
	for end := time.Now().Add(30 * time.Second); now > base && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		now = openFDs(t, pid)
	}
	if now > base {
		t.Fatalf("%d descriptors open, %d before the stream that takes nothing: its connection is kept", now, base)
	}
	t.Logf("descriptors back to %d after %v", now, time.Since(closing).Round(100*time.Millisecond))
}
