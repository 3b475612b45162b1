package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseLines opens GET path as a stream and hands over its lines, comments
// included; the test's cleanup closes it.
func sseLines(t *testing.T, ts *testServer, path string) (<-chan string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hr, _ := http.NewRequestWithContext(ctx, "GET", ts.url+path, nil)
	resp, err := ts.tr.RoundTrip(hr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	ch := make(chan string, 256)
	go func() {
		defer close(ch)
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case ch <- strings.TrimSuffix(line, "\n"):
			case <-ctx.Done():
				return
			}
		}
	}()
	stop := func() { cancel(); resp.Body.Close() }
	t.Cleanup(stop)
	return ch, stop
}

// nextSignal reads lines up to the next sig event and returns its data.
func nextSignal(t *testing.T, lines <-chan string) signalJSON {
	t.Helper()
	for {
		line, ok := await(t, "a line of the signal stream", async(func() lineOK { l, ok := <-lines; return lineOK{l, ok} })).split()
		if !ok {
			t.Fatal("the signal stream ended")
		}
		if line != "event: sig" {
			continue
		}
		data, _ := await(t, "the signal's data", async(func() lineOK { l, ok := <-lines; return lineOK{l, ok} })).split()
		var s signalJSON
		if !strings.HasPrefix(data, "data: ") || json.Unmarshal([]byte(data[6:]), &s) != nil {
			t.Fatalf("a sig event with data line %q", data)
		}
		return s
	}
}

type lineOK struct {
	l  string
	ok bool
}

func (l lineOK) split() (string, bool) { return l.l, l.ok }

// A signal sent over TCP reaches the HTTP stream listening on a matching
// pattern, and counts among its receivers; closing the stream drops the
// subscription.
func TestSignalStream(t *testing.T) {
	ts := newServer(t, setup{})
	sender := dialTCP(t, startTCP(t, ts))
	lines, stop := sseLines(t, ts, "/v1/signals?pattern=jobs.*")
	sender.send("signal", "jobs.build", "hello world")
	if got := sender.reply(); got != "ok 1" {
		t.Fatalf("signal to a channel the stream listens on: %q, want ok 1", got)
	}
	if s := nextSignal(t, lines); s.Channel != "jobs.build" || s.Payload != "hello world" {
		t.Fatalf("signal %+v", s)
	}
	sender.send("signal", "other", "x")
	if got := sender.reply(); got != "ok 0" {
		t.Fatalf("signal to another channel: %q, want ok 0", got)
	}
	// Two streams of one queue group: each signal reaches one of them.
	g1, _ := sseLines(t, ts, "/v1/signals?pattern=q.>&group=workers")
	g2, _ := sseLines(t, ts, "/v1/signals?pattern=q.>&group=workers")
	sender.send("signal", "q.a.b", "task")
	if got := sender.reply(); got != "ok 1" {
		t.Fatalf("signal to a queue group: %q, want ok 1", got)
	}
	select {
	case s := <-signalOf(g1):
		if s.Payload != "task" {
			t.Fatalf("group member got %+v", s)
		}
	case s := <-signalOf(g2):
		if s.Payload != "task" {
			t.Fatalf("group member got %+v", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no member of the group got the signal within 20 s")
	}
	stop()
	eventually(t, "the closed stream's subscription to go", func() bool {
		sender.send("signal", "jobs.build", "again")
		return sender.reply() == "ok 0"
	})
}

// signalOf reads the next sig event of lines in the background.
func signalOf(lines <-chan string) <-chan signalJSON {
	ch := make(chan signalJSON, 1)
	go func() {
		for line := range lines {
			if line == "event: sig" {
				var s signalJSON
				if data, ok := <-lines; ok && json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &s) == nil {
					ch <- s
				}
				return
			}
		}
	}()
	return ch
}

// A bad pattern is refused before the stream starts; so is a missing one.
func TestSignalStreamBadPattern(t *testing.T) {
	ts := newServer(t, setup{})
	expect(t, "no pattern", ts.send(req{method: "GET", path: "/v1/signals"}), 400, codeBadRequest)
	expect(t, "fo* pattern", ts.send(req{method: "GET", path: "/v1/signals?pattern=fo*"}), 400, codeBadRequest)
}

// Keep-alive comments come at --http-sse-ping-interval, on both streams.
func TestSSEPingInterval(t *testing.T) {
	ts := observed(t, Config{SSEPingInterval: 20 * time.Millisecond})
	for _, path := range []string{"/v1/signals?pattern=p", "/v1/events"} {
		lines, _ := sseLines(t, ts, path)
		for pings := 0; pings < 2; {
			line, ok := await(t, "a ping on "+path, async(func() lineOK { l, ok := <-lines; return lineOK{l, ok} })).split()
			if !ok {
				t.Fatalf("%s ended", path)
			}
			if line == ": ping" {
				pings++
			}
		}
	}
}

// A stream whose reader reads nothing is cut off once 64 signals are
// queued for it: the signal that found its queue full does not count, the
// server closes the stream and its session, and later signals find no
// receiver. Nothing grows meanwhile: the queue is a fixed channel.
func TestSlowSignalReaderIsCut(t *testing.T) {
	ts := newServer(t, setup{})
	sender := dialTCP(t, startTCP(t, ts))
	sender.send("signal", "slow", "nobody yet") // the sender's session is open once it answers
	if got := sender.reply(); got != "ok 0" {
		t.Fatalf("signal before the stream: %q", got)
	}
	before := ts.hub.Connections()
	// A raw connection, so that the test can stop reading.
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/signals?pattern=slow HTTP/1.1\r\nHost: test\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %v %v", resp, err)
	}
	// Socket buffers take some megabytes before the server's write
	// blocks: signals go in pipelined batches of 1000 (payloads of 200
	// bytes, under the 256-byte line cap), 200 batches at most, far more
	// than the buffers hold.
	payload := strings.Repeat("x", 200)
	batch := strings.Repeat("signal\nslow\n"+payload+"\n", 1000)
	cut := false
	for i := 0; i < 200 && !cut; i++ {
		if _, err := io.WriteString(sender.c, batch); err != nil {
			t.Fatal(err)
		}
		for range 1000 {
			switch got := sender.reply(); got {
			case "ok 1":
			case "ok 0":
				cut = true
			default:
				t.Fatalf("signal of batch %d: %q", i, got)
			}
		}
	}
	if !cut {
		t.Fatal("200000 signals unread, and the stream still counts as a receiver")
	}
	eventually(t, "the cut stream's session to close", func() bool { return ts.hub.Connections() == before })
	sender.send("signal", "slow", "after")
	if got := sender.reply(); got != "ok 0" {
		t.Fatalf("a signal after the cut: %q", got)
	}
	// The server ends the response: reading what was sent comes to its
	// end (or a reset), not to a read that waits for ever.
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && strings.Contains(err.Error(), "timeout") {
		t.Fatalf("the cut stream stays open: %v", err)
	}
}
