package netconn

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/session"
)

// maxUnsentBound is what a connection's unsent output may reach while its
// client does not read: session's maxUnsent (64 KiB) plus the last reply
// written before the session paused.
const maxUnsentBound = 64<<10 + 1<<10

// pipeline writes n incr frames from a goroutine, in chunks, and counts
// what the socket took; it does not read.
func pipeline(c *client, key string, n int) (written *atomic.Int64, done chan error) {
	frame := request("incr", key, "1")
	chunk := []byte(strings.Repeat(frame, 1024))
	written, done = new(atomic.Int64), make(chan error, 1)
	go func() {
		_ = c.c.SetWriteDeadline(time.Time{})
		for left := n; left > 0; {
			b := chunk[:min(left, 1024)*len(frame)]
			m, err := c.c.Write(b)
			written.Add(int64(m))
			if err != nil {
				done <- err
				return
			}
			left -= len(b) / len(frame)
		}
		done <- nil
	}()
	return written, done
}

// counting returns "ok 1\nok 2\n…ok n\n".
func counting(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		b.WriteString("ok ")
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// A client that pipelines and never reads makes the server stop reading
// it: the session pauses, the reader stops calling Read, and flow control
// holds the client back, with the unsent output under its bound. Once the
// client reads, it gets every reply, in order, and its writes complete.
func TestBackpressureStopsReading(t *testing.T) {
	h := start(t, options{smallBuffers: true})
	c := h.dialSmall(t)
	sock := h.lastAccepted()
	const n = 200_000 // 1.8 MB of requests: far more than the socket buffers hold
	written, done := pipeline(c, "bp", n)

	var sc *conn
	waitFor(t, "the server to pause reading", func() bool {
		cs := h.conns()
		if len(cs) == 1 && cs[0].paused.Load() && !sock.reading.Load() {
			sc = cs[0]
			return true
		}
		return false
	})
	read := sock.read.Load()
	if u := sc.Unsent(); u > maxUnsentBound {
		t.Fatalf("paused with %d bytes unsent, bound %d", u, maxUnsentBound)
	}
	// Paused, the reader is parked with what it read: the server reads
	// nothing more, and the client cannot send all it has.
	if w := written.Load(); w >= int64(n*len(request("incr", "bp", "1"))) {
		t.Fatalf("the client wrote everything (%d bytes) to a server that stopped reading", w)
	}
	if got := sock.read.Load(); got != read || sock.reading.Load() {
		t.Fatalf("the paused server read again: %d bytes, then %d", read, got)
	}
	t.Logf("the server read %d KiB, the client wrote %d KiB before the pause held it", read>>10, written.Load()>>10)

	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	want := counting(n)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c.rd, got); err != nil {
		t.Fatalf("reading the replies: %v", err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("replies differ from ok 1…ok %d at byte %d: %q", n, i, got[max(0, i-20):min(len(got), i+20)])
	}
	if err := <-done; err != nil {
		t.Fatalf("the client's writes: %v", err)
	}
	waitFor(t, "the connection to resume reading", func() bool { return !sc.paused.Load() })
	c.send("ping", "_", "_")
	c.expect("ok")
}

// A client that stops reading with replies unsent is closed once the
// write timeout passes without progress, its session ended.
func TestWriteTimeoutClosesStuckClient(t *testing.T) {
	h := start(t, options{smallBuffers: true, sess: session.Config{WriteTimeout: 5 * time.Second}})
	holder := h.dial(t)
	c := h.dialSmall(t)
	c.grant("l", "held", "0 300")
	sock := h.lastAccepted()
	_, done := pipeline(c, "wt", 200_000)
	waitFor(t, "the server to pause reading", func() bool {
		cs := h.conns()
		for _, x := range cs {
			if x.paused.Load() && !sock.reading.Load() {
				return true
			}
		}
		return false
	})
	h.tick(4900 * time.Millisecond)
	if n := h.srv.Connections(); n != 2 {
		t.Fatalf("%d connections 4.9 s after the client stopped reading, want 2", n)
	}
	waitFor(t, "the stuck connection to close", func() bool {
		h.tick(100 * time.Millisecond)
		return h.srv.Connections() == 1
	})
	// Its session ended: its lock went with it.
	holder.send("l", "held", "0")
	holder.expect("ok T 33")
	if err := <-done; err == nil {
		t.Fatal("the client's writes completed on a closed connection")
	}
}

// A subscriber that leaves its pushes unread is passed over by signals
// once they pass the session's first bound, and disconnected as a slow
// consumer at the second: the close gives the peer a linger of a second
// to take something, then cuts the socket. The publisher is never held up.
func TestSlowConsumerDisconnected(t *testing.T) {
	h := start(t, options{smallBuffers: true, sess: session.Config{ReadTimeout: time.Hour}})
	sub := h.dialSmall(t)
	sub.send("listen", "ch", "")
	sub.expect("ok")
	pub := h.dial(t)
	payload := strings.Repeat("x", 200)
	counted, skipped := 0, 0
	for h.srv.Connections() == 2 {
		if counted+skipped > 100_000 {
			t.Fatal("the subscriber was never disconnected")
		}
		switch got := pub.do("signal", "ch", payload); got {
		case "ok 1":
			counted++
		case "ok 0":
			// Behind: passed over, and once cut, lingering (time moves
			// for the linger only now, as the read timeout is an hour).
			skipped++
			h.tick(100 * time.Millisecond)
		default:
			t.Fatalf("signal: %q", got)
		}
	}
	if skipped == 0 || counted == 0 {
		t.Errorf("%d signals counted the subscriber, %d passed it over; want some of each", counted, skipped)
	}
	if n := h.hub.Connections(); n != 1 {
		t.Fatalf("%d sessions after the cut, want 1", n)
	}
}
