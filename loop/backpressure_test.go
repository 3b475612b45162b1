package loop

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// incrs returns n pipelined "incr <key> 1" requests: their replies count
// up, so order and completeness can be checked from the replies alone.
func incrs(key string, n int) string {
	return strings.Repeat(request("incr", key, "1"), n)
}

// checkCounting fails unless replies is "ok 1\nok 2\n…ok n\n".
func checkCounting(t *testing.T, replies string, n int) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(replies, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d replies, want %d", len(lines), n)
	}
	for i, l := range lines {
		if l != "ok "+strconv.Itoa(i+1) {
			t.Fatalf("reply %d is %q, want ok %d", i, l, i+1)
		}
	}
}

// request is one frame in wire form.
func request(cmd, key, arg string) string { return cmd + "\n" + key + "\n" + arg + "\n" }

// Over real sockets: a client that writes and never reads is stopped by
// TCP flow control once the server pauses its connection, instead of
// having everything it sends read and buffered; when it reads, every
// reply comes, in order. (Linux only: elsewhere reading cannot pause.)
func TestBackpressureStopsReadingSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("pausing reads needs Linux epoll")
	}
	ts, err := startServer(Config{ReadTimeout: time.Minute}, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	c := dial(t, ts)
	frame := request("incr", "bp", "1")
	chunk := []byte(strings.Repeat(frame, 4096))
	// Write until the server stops taking bytes: a write that cannot
	// finish within a second means the socket buffers are full.
	written := 0
	for {
		_ = c.c.SetWriteDeadline(time.Now().Add(time.Second))
		n, err := c.c.Write(chunk)
		written += n
		if err != nil {
			break
		}
		if written > 256<<20 {
			t.Fatalf("the server took %d MiB from a client that reads nothing", written>>20)
		}
	}
	t.Logf("the server stopped reading after %d KiB", written>>10)
	// The last, partial frame is never answered; every complete one is.
	n := written / len(frame)
	wrote := make(chan error, 1)
	if rest := written % len(frame); rest > 0 {
		// Finish the frame cut by the deadline; the write may wait for
		// the server to read again, which needs us to read first.
		n++
		go func() {
			_ = c.c.SetWriteDeadline(time.Time{})
			_, err := c.c.Write([]byte(frame[rest:]))
			wrote <- err
		}()
	} else {
		wrote <- nil
	}
	_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var replies strings.Builder
	for i := range n {
		l, err := c.rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n, err)
		}
		replies.WriteString(l)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("completing the last frame: %v", err)
	}
	checkCounting(t, replies.String(), n)
}
