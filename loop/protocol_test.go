package loop

import (
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
)

// stats fetches and decodes the stats document.
func stats(t *testing.T, ts *testServer) map[string]any {
	t.Helper()
	c := dial(t, ts)
	c.send("stats", "_", "_")
	line := c.expect("ok *")
	var doc map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ok ")), &doc); err != nil {
		t.Fatalf("stats JSON: %v in %q", err, line)
	}
	c.c.Close()
	return doc
}

// waitersOn reports the waiters count of lock k on the shared server.
func waitersOn(t *testing.T, k string) int { return waitersOnServer(t, plain, k) }

// Every malformed-input row of spec §A.5 that v2 keeps the connection for.
func TestMalformedInputKeepsConnection(t *testing.T) {
	k := key("bad")
	c := dial(t, plain)
	for _, req := range [][3]string{
		{"bogus", k, "0"},                // 3 unknown command
		{"L", k, "0 5"},                  // 3 commands are case-sensitive
		{"", k, "0"},                     // 3 empty command
		{"l", k, "abc"},                  // 4 bad integer
		{"l", k, "1.5"},                  // 4
		{"l", k, "99999999999999999999"}, // 4 overflow
		{"l", "", "0 5"},                 // 5 empty key
		{"l", "a b", "0 5"},              // 5 key with a space
		{"l", "a\tb", "0 5"},             // 5 key with a TAB
		{"l", k, "-1"},                   // 6 negative timeout
		{"r", k, "  "},                   // 7 empty token
		{"l", k, "1 2 3"},                // 8 arg count
		{"w", k, ""},                     // 8
		{"e", k, "30 junk"},              // 8
		{"l", k, "0 0"},                  // 9 lease zero
		{"l", k, "0 -3"},                 // 9 lease negative
		{"sl", k, "0 0"},                 // 13 limit zero
		{"sl", k, "0 2000000"},           // 13 limit over 1<<20
	} {
		c.send(req[0], req[1], req[2])
		if got := c.expect("error"); got != "error" {
			t.Fatalf("%q: %q", req, got)
		}
	}
	c.do("l", k, "0 5", "ok T 5")
}

func TestLineTooLongClosesAfterLF(t *testing.T) {
	c := dial(t, plain)
	c.raw("l\n" + strings.Repeat("x", 300))
	c.silent(200 * time.Millisecond) // no answer before the LF
	c.raw(strings.Repeat("y", 100) + "\n")
	c.expect("error")
	c.closed()

	c = dial(t, plain)
	c.raw(strings.Repeat("l", 300) + "\n" + key("a") + "\n0\n")
	c.expect("error")
	c.closed()

	// 256 bytes is the cap, with or without a trailing CR.
	c = dial(t, plain)
	k := key("k") + "-"
	k += strings.Repeat("x", 256-len(k))
	c.raw("l\r\n" + k + "\r\n0 5\r\n")
	c.expect("ok T 5")
	c.raw("l\n" + k + "x\n0 5\n")
	c.expect("error")
	c.closed()
}

func TestReadTimeoutClosesIdleConnection(t *testing.T) {
	// plain runs with a 3 s read timeout; a partial frame does not extend
	// it. start comes before the dial: the deadline cannot start earlier.
	start := time.Now()
	c := dial(t, plain)
	c.raw("l\n")
	got, err := c.line(replyWithin)
	if err != nil || got != "error" {
		t.Fatalf("got %q, %v; want error then close", got, err)
	}
	if el := time.Since(start); el < 3*time.Second {
		t.Fatalf("closed %v after the dial, before the 3 s read timeout", el)
	}
	c.closed()
}

func TestPipelinedTenInOneWrite(t *testing.T) {
	a, b, cc, d, e := key("a"), key("b"), key("c"), key("d"), key("e")
	c := dial(t, plain)
	var sb strings.Builder
	for _, f := range [][3]string{
		{"l", a, "0 5"}, {"l", a, "0 5"}, {"bogus", a, "0"}, {"sl", b, "0 2 7"}, {"sl", b, "0 3 7"},
		{"e", cc, "9"}, {"e", cc, "9"}, {"w", d, "0"}, {"n", a, "0123456789abcdef0123456789abcdef 5"}, {"l", e, "0 4"},
	} {
		sb.WriteString(f[0] + "\n" + f[1] + "\n" + f[2] + "\n")
	}
	c.raw(sb.String())
	for _, want := range []string{
		"ok T 5", "timeout", "error", "ok T 7", "error_limit_mismatch",
		"acquired T 9", "error_already_enqueued", "error_not_enqueued", "error", "ok T 4",
	} {
		c.expect(want)
	}
}

func TestPipelineBehindBlockedRequest(t *testing.T) {
	a, b := key("a"), key("b")
	holder, c := dial(t, plain), dial(t, plain)
	tok := holder.do("l", a, "0 10", "ok T 10")[1]
	c.raw("l\n" + a + "\n5 8\nl\n" + b + "\n0 6\n")
	c.silent(200 * time.Millisecond)
	holder.do("r", a, tok, "ok")
	c.expect("ok T 8")
	c.expect("ok T 6")
}

func TestBlockedConnectionInputCap(t *testing.T) {
	a := key("a")
	holder, c := dial(t, plain), dial(t, plain)
	holder.do("l", a, "0 10", "ok T 10")
	c.send("l", a, "10")
	waitFor(t, func() bool { return waitersOn(t, a) == 1 })
	c.raw(strings.Repeat("ping\n_\n_\n", 1000)) // 9 KB behind a parked request
	c.closed()
	waitFor(t, func() bool { return waitersOn(t, a) == 0 })
}

func TestAuth(t *testing.T) {
	c := dial(t, authed)
	c.do("auth", "_", testAuth, "ok")
	c.do("l", key("a"), "0 5", "ok T 5")
	c.do("auth", "_", testAuth, "error") // only as the first request

	bad := dial(t, authed)
	start := time.Now()
	bad.do("auth", "_", "wrong", "error_auth")
	bad.closed()
	if el := time.Since(start); el < 90*time.Millisecond {
		t.Fatalf("closed after %v, before the 100 ms cool-down", el)
	}

	other := dial(t, authed)
	other.do("l", key("a"), "0 5", "error_auth")
	other.closed()

	noToken := dial(t, plain)
	noToken.do("auth", "_", "x", "error")
	noToken.do("ping", "_", "_", "ok")
}

func TestStatsShape(t *testing.T) {
	l, s, idle := key("lock"), key("sem"), key("idle")
	c, w := dial(t, plain), dial(t, plain)
	c.do("l", l, "0 30", "ok T 30")
	c.do("sl", s, "0 3 30", "ok T 30")
	tok := c.do("l", idle, "0 30", "ok T 30")[1]
	c.do("r", idle, tok, "ok")
	w.send("l", l, "10")
	waitFor(t, func() bool { return waitersOn(t, l) == 1 })

	doc := stats(t, plain)
	for _, f := range []string{"connections", "locks", "semaphores", "idle_locks", "idle_semaphores"} {
		if _, ok := doc[f]; !ok {
			t.Fatalf("stats lacks %q: %v", f, doc)
		}
	}
	if len(doc) != 5 {
		t.Fatalf("v2 stats has %d keys, want exactly the five of spec §F.1: %v", len(doc), doc)
	}
	if n := doc["connections"].(float64); n < 2 {
		t.Fatalf("connections = %v", n)
	}
	find := func(arr, k string) map[string]any {
		for _, e := range doc[arr].([]any) {
			if m := e.(map[string]any); m["key"] == k {
				return m
			}
		}
		t.Fatalf("%s has no %s", arr, k)
		return nil
	}
	lk := find("locks", l)
	if lk["waiters"].(float64) != 1 || lk["owner_conn_id"].(float64) < 1 || lk["lease_expires_in_s"].(float64) <= 25 {
		t.Fatalf("lock entry %v", lk)
	}
	sk := find("semaphores", s)
	if sk["limit"].(float64) != 3 || sk["holders"].(float64) != 1 || sk["waiters"].(float64) != 0 {
		t.Fatalf("semaphore entry %v", sk)
	}
	if ik := find("idle_locks", idle); ik["idle_s"].(float64) < 0 {
		t.Fatalf("idle entry %v", ik)
	}
}

func TestPingBarrierStableRef(t *testing.T) {
	c := dial(t, plain)
	c.do("ping", "", "", "ok")
	c.do("barrier", "_", "_", "ok")
	c.do("stable-ref", "worker-1", "_", "ok")
	c.do("stable-ref", "worker-1", "_", "error")
}

func TestFrameSplitAcrossWrites(t *testing.T) {
	k := key("split")
	c := dial(t, plain)
	// Each partial write must be kept, not answered and not dropped.
	for _, part := range []string{"l\n", k[:2], k[2:] + "\n0", " 5"} {
		c.raw(part)
		c.silent(50 * time.Millisecond)
	}
	c.raw("\n")
	c.expect("ok T 5")
}

func TestWriteTimeoutClosesNonReader(t *testing.T) {
	// Make stats replies large, ask for far more of them than the socket
	// buffers hold, and stop reading: the server must give up on this
	// connection after --write-timeout (1 s here) rather than buffer
	// replies for it forever. The test reads only once the server has
	// said so (a loaded machine may take seconds to fill the buffers;
	// reading earlier is progress, which restarts the deadline).
	var events syncLog
	ts, err := startServer(Config{ReadTimeout: 3 * time.Second, WriteTimeout: time.Second,
		Events: ratelog.New(slog.New(slog.NewTextHandler(&events, nil)), 1000, 1000)}, engine.Config{MaxLocks: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	c := dial(t, ts)
	for i := 0; i < 300; i++ {
		c.do("l", key("wt"), "0 60", "ok T 60")
	}
	const asked = 5000 // ~100 MB of replies
	c.raw(strings.Repeat("stats\n_\n_\n", asked))
	for deadline := time.Now().Add(2 * time.Minute); !strings.Contains(events.String(), "write timeout"); {
		if time.Now().After(deadline) {
			t.Fatalf("no write timeout within 2 minutes of not reading; events:\n%s", events.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	replies := 0
	c.c.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		if _, err := c.rd.ReadString('\n'); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %d replies", replies)
			}
			break
		}
		replies++
	}
	if replies >= asked {
		t.Fatalf("all %d replies arrived: the connection was not closed early", replies)
	}
	t.Logf("closed after %d of %d replies", replies, asked)
}

// syncLog is a log destination a server writes while the test reads it.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
