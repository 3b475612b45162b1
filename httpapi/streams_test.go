package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SSE routes' places: streams that never read, all from one address,
// and readers whose socket takes nothing.

// rawStream opens GET path on a raw connection from the local address
// ip, reads the answer's head and nothing after (the body of a 503 is
// read too). control, if not nil, sets the socket up before it connects.
func rawStream(t *testing.T, ts *testServer, ip, path string, control func(string, string, syscall.RawConn) error) (net.Conn, *http.Response) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Control: control}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	// A small buffer: the head, and as little of the stream as can be.
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), nil)
	if err != nil {
		t.Fatalf("GET %s from %s: %v", path, ip, err)
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c, resp
}

// TestStreamsPerIP: 70 streams that never read, from one address, take
// that address's share of a route (Config.MaxStreamsPerIP, 8 by default)
// and no more; the others get 503 max_streams_per_ip, and a reader from
// another address is served.
func TestStreamsPerIP(t *testing.T) {
	ts := observed(t, Config{})
	for _, path := range []string{"/v1/events", "/v1/signals?pattern=idle"} {
		statuses := map[int]int{}
		for i := 0; i < 70; i++ {
			_, resp := rawStream(t, ts, "127.0.0.1", path, nil)
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Content-Type") == "" {
				t.Fatalf("GET %s: a 503 without a body", path)
			}
		}
		if statuses[http.StatusOK] != defaultMaxStreamsPerIP || statuses[http.StatusServiceUnavailable] != 70-defaultMaxStreamsPerIP {
			t.Errorf("GET %s 70 times from one address: %v, want %d × 200 and the rest 503", path, statuses, defaultMaxStreamsPerIP)
		}
		// The refusal says why.
		c, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error, Detail string }
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 503 || e.Error != codeMaxStreamsPerIP {
			t.Errorf("GET %s over the address's share: %d %+v (%v), want 503 %s", path, resp.StatusCode, e, err, codeMaxStreamsPerIP)
		}
		c.Close()
		// Another address has its own share.
		_, resp = rawStream(t, ts, "127.0.0.2", path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s from another address, with 70 idle streams open from the first: %d, want 200", path, resp.StatusCode)
		}
	}
}

// tinyReceiveBuffer gives a socket the smallest receive buffer: a peer
// that reads nothing has its window shut after a few KiB.
func tinyReceiveBuffer(_, _ string, rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1)
	}); err != nil {
		return err
	}
	return serr
}

// TestStreamReaderThatTakesNothingIsCut: a reader whose socket takes no
// byte for a whole ping period (it stopped reading and its window is
// shut, as a dead peer acknowledges nothing either) is cut at the next
// keep-alive ping, and its place freed: without waiting for the server's
// own buffers to fill, which a few KiB do not.
func TestStreamReaderThatTakesNothingIsCut(t *testing.T) {
	ts := observed(t, Config{SSEPingInterval: 20 * time.Millisecond})
	payload := strings.Repeat("x", 200)

	t.Run("signals", func(t *testing.T) {
		before := ts.hub.Connections()
		rawStream(t, ts, "127.0.0.1", "/v1/signals?pattern=dead", tinyReceiveBuffer)
		// Some KiB: more than the peer's window, far less than the
		// server's socket buffer.
		for i := 0; i < 24; i++ {
			r := ts.send(req{method: "POST", path: "/v1/signals/dead", body: map[string]string{"payload": payload}})
			if r.status != 200 {
				t.Fatalf("signal %d: %d %s", i, r.status, r.body)
			}
		}
		eventually(t, "the stream that takes nothing to be cut, and its session closed", func() bool { return ts.hub.Connections() == before })
	})
	t.Run("events", func(t *testing.T) {
		subs := func() int {
			ts.api.events.mu.Lock()
			defer ts.api.events.mu.Unlock()
			return len(ts.api.events.subs)
		}
		rawStream(t, ts, "127.0.0.1", "/v1/events?prefix=dead", tinyReceiveBuffer)
		sid := ts.newSession()
		for i := 0; i < 12; i++ {
			g := ts.lock(sid, "dead-"+payload[:100], 0)
			ts.release(sid, "dead-"+payload[:100], g.Token)
		}
		eventually(t, "the stream that takes nothing to be cut", func() bool { return subs() == 0 })
	})
}
