package cluster_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestClusterPipelining: a connection keeps many requests in the log at
// once and gets their replies in the order it sent them, with requests a
// node answers itself (ping, stats) in their place; requests sent behind
// one that waits run only after it, even though they reached the log
// first; a client that half-closes after its requests gets every reply.
// Over both transports: the gnet loops learn of a half-close while reading
// is paused from their peer watch, netconn by reading on.
func TestClusterPipelining(t *testing.T) {
	for _, tr := range []transport{overLoops, overNetconn} {
		t.Run(tr.String(), func(t *testing.T) { testClusterPipelining(t, tr) })
	}
}

func testClusterPipelining(t *testing.T, tr transport) {
	ss := startServersOver(t, 3, steadyRaft, tr)
	l := leaderOf(t, ss, nil)

	a := dial(t, l)
	var burst bytes.Buffer
	var want []string
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&burst, "incr\np\n1\n")
		want = append(want, fmt.Sprint("ok ", i))
		if i == 10 {
			burst.WriteString("ping\n_\n_\n")
			want = append(want, "ok")
		}
		if i == 20 {
			burst.WriteString("stats\n_\n_\n")
			want = append(want, "ok {")
		}
		if i == 30 {
			burst.WriteString("barrier\n_\n_\n") // through the log, in its place
			want = append(want, "ok")
		}
	}
	burst.WriteString("l\nk\n0 30\n")
	if _, err := a.c.Write(burst.Bytes()); err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if got := a.reply(awaitFor); !strings.HasPrefix(got, w) || (w != "ok {" && got != w) {
			t.Fatalf("reply %d: %q, want %q", i, got, w)
		}
	}
	tokA := strings.Fields(a.reply(awaitFor))
	if len(tokA) != 3 || tokA[0] != "ok" {
		t.Fatalf("try-lock: %q", tokA)
	}

	// b's lock waits behind a's hold; the increment b sent after it is in
	// the log before c's, yet must run after it.
	b := dial(t, l)
	if _, err := b.c.Write([]byte("l\nk\n10 30\nincr\nq\n1\nping\n_\n_\n")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
		if _, waiting := l.node.Engine().LockCounts(); waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b's lock never waited")
		}
	}
	c := dial(t, l)
	if got := c.do("incr", "q", "0"); got != "ok 0" {
		t.Fatalf("c read the counter b increments after its lock: %q, want ok 0", got)
	}
	if got := a.do("r", "k", tokA[1]); got != "ok" {
		t.Fatalf("release: %q", got)
	}
	if got := strings.Fields(b.reply(awaitFor)); len(got) != 3 || got[0] != "ok" {
		t.Fatalf("b's lock: %q", got)
	}
	for _, w := range []string{"ok 1", "ok"} {
		if got := b.reply(awaitFor); got != w {
			t.Fatalf("b after its grant: %q, want %q", got, w)
		}
	}

	// A client that goes away while its lock waits leaves the queue at
	// once, not when the wait would have ended.
	w := dial(t, l)
	w.send("l", "k", "60 30")
	awaitWaiters(t, l, 1)
	w.c.Close()
	awaitWaiters(t, l, 0)

	// nc -N: requests, then a half-close; every reply still comes.
	conn, err := net.Dial("tcp", l.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(strings.Repeat("incr\nh\n1\n", 5))); err != nil {
		t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(awaitFor))
	all, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(all), "ok 1\nok 2\nok 3\nok 4\nok 5\n"; got != want {
		t.Fatalf("half-closed client got %q, want %q", got, want)
	}
}

// TestClusterQueuedSignalCountsReceivers: a signal a connection sent
// behind its lock that waits runs from the engine's queue when the lock
// is granted; its reply still counts the receivers its pushes reached
// (ok 1, the listener's), and comes after the grant and before the
// request sent after it.
func TestClusterQueuedSignalCountsReceivers(t *testing.T) {
	ss := startServers(t, 3)
	l := leaderOf(t, ss, nil)
	a, b, c := dial(t, l), dial(t, l), dial(t, l)
	if got := c.do("listen", "ch", ""); got != "ok" {
		t.Fatalf("listen: %q", got)
	}
	tokA := strings.Fields(a.do("l", "k", "0 30"))
	if len(tokA) != 3 || tokA[0] != "ok" {
		t.Fatalf("a's lock: %q", tokA)
	}
	if _, err := b.c.Write([]byte("l\nk\n10 30\nsignal\nch\nhello\nincr\ns\n1\n")); err != nil {
		t.Fatal(err)
	}
	awaitWaiters(t, l, 1)
	if got := a.do("r", "k", tokA[1]); got != "ok" {
		t.Fatalf("release: %q", got)
	}
	if got := strings.Fields(b.reply(awaitFor)); len(got) != 3 || got[0] != "ok" {
		t.Fatalf("b's lock: %q", got)
	}
	for _, w := range []string{"ok 1", "ok 1"} {
		if got := b.reply(awaitFor); got != w {
			t.Fatalf("b after its grant: %q, want %q (signal's receivers, then incr)", got, w)
		}
	}
	if got := c.reply(awaitFor); !strings.Contains(got, "hello") {
		t.Fatalf("the listener got %q", got)
	}
}
