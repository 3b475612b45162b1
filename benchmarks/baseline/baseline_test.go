package baseline

import (
	"bufio"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

type client struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, s *Server) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// A generous bound on the whole conversation: a reply the server
	// never sends fails the test instead of hanging it.
	_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
	return &client{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *client) send(cmd, key, arg string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, cmd+"\n"+key+"\n"+arg+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) reply() string {
	c.t.Helper()
	line, err := c.br.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return strings.TrimSuffix(line, "\n")
}

func (c *client) do(cmd, key, arg string) string {
	c.t.Helper()
	c.send(cmd, key, arg)
	return c.reply()
}

var grantRE = regexp.MustCompile(`^ok ([0-9a-f]{32}) ([0-9]+)$`)

// grant checks a grant reply and returns its token.
func (c *client) grant(reply, lease string) string {
	c.t.Helper()
	m := grantRE.FindStringSubmatch(reply)
	if m == nil || m[2] != lease {
		c.t.Fatalf("reply %q, want ok <token> %s", reply, lease)
	}
	return m[1]
}

func TestLockReleaseRenew(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	tok := c.grant(c.do("l", "k", "10"), "33")
	tok2 := c.grant(c.do("l", "k2", "10 7"), "7")
	if tok == tok2 {
		t.Fatal("two grants with the same token")
	}
	if got := c.do("n", "k", tok+" 12"); got != "ok 12" {
		t.Fatalf("renew: %q", got)
	}
	if got := c.do("r", "k", "ffffffffffffffffffffffffffffffff"); got != "error" {
		t.Fatalf("release with a wrong token: %q", got)
	}
	if got := c.do("r", "k", tok); got != "ok" {
		t.Fatalf("release: %q", got)
	}
	if got := c.do("r", "k", tok); got != "error" {
		t.Fatalf("second release: %q", got)
	}
	if got := c.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("ping: %q", got)
	}
	for _, bad := range [][3]string{{"bogus", "k", "_"}, {"l", "k", "x"}, {"l", "k", "-1"}, {"l", "k", "1 0"}, {"sl", "k", "1"}, {"l", "a b", "1"}} {
		if got := c.do(bad[0], bad[1], bad[2]); got != "error" {
			t.Errorf("%q: %q, want error", bad, got)
		}
	}
	// The connection survives parse errors.
	c.grant(c.do("l", "k", "0 5"), "5")
}

func TestTryLockAndFIFOHandOff(t *testing.T) {
	s := start(t, Config{})
	a, b, c := dial(t, s), dial(t, s), dial(t, s)
	tok := a.grant(a.do("l", "hot", "10"), "33")
	if got := b.do("l", "hot", "0"); got != "timeout" {
		t.Fatalf("try on a held lock: %q", got)
	}
	b.send("l", "hot", "10")
	waitWaiters(t, s, "lock:hot", 1)
	c.send("l", "hot", "10")
	waitWaiters(t, s, "lock:hot", 2)
	if got := a.do("r", "hot", tok); got != "ok" {
		t.Fatal(got)
	}
	// b queued first, so b gets it; c still waits.
	tb := b.grant(b.reply(), "33")
	if got := b.do("r", "hot", tb); got != "ok" {
		t.Fatal(got)
	}
	c.grant(c.reply(), "33")
}

// waitWaiters waits until key has n queued waiters: the order in which two
// clients' requests reach the server is otherwise not defined.
func waitWaiters(t *testing.T, s *Server, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.tab.mu.Lock()
		got := 0
		if r := s.tab.res[key]; r != nil {
			got = len(r.waiters)
		}
		s.tab.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d waiters, want %d", key, got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSemaphore(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	t1 := c.grant(c.do("sl", "s", "0 2"), "33")
	c.grant(c.do("sl", "s", "0 2 9"), "9")
	if got := c.do("sl", "s", "0 2"); got != "timeout" {
		t.Fatalf("third permit of 2: %q", got)
	}
	if got := c.do("sl", "s", "0 3"); got != "error_limit_mismatch" {
		t.Fatalf("limit mismatch: %q", got)
	}
	if got := c.do("r", "s", t1); got != "error" {
		t.Fatalf("r on a semaphore token (separate namespaces): %q", got)
	}
	if got := c.do("sr", "s", t1); got != "ok" {
		t.Fatalf("sr: %q", got)
	}
	// A lock of the same name is a different resource.
	c.grant(c.do("l", "s", "0"), "33")
}

func TestMaxLocks(t *testing.T) {
	s := start(t, Config{MaxLocks: 2})
	c := dial(t, s)
	c.grant(c.do("l", "a", "0"), "33")
	c.grant(c.do("sl", "b", "0 3"), "33")
	if got := c.do("l", "c", "0"); got != "error_max_locks" {
		t.Fatalf("third key: %q", got)
	}
}

func TestDisconnectReleases(t *testing.T) {
	s := start(t, Config{})
	a, b := dial(t, s), dial(t, s)
	a.grant(a.do("l", "k", "0"), "33")
	b.send("l", "k", "10")
	waitWaiters(t, s, "lock:k", 1)
	a.nc.Close()
	b.grant(b.reply(), "33")
}

func TestTimeoutAndLeaseExpiry(t *testing.T) {
	t.Parallel()
	s := start(t, Config{SweepInterval: 20 * time.Millisecond})
	a, b, c := dial(t, s), dial(t, s), dial(t, s)
	began := time.Now()                 // before the lease can start
	a.grant(a.do("l", "k", "0 1"), "1") // 1 s lease, never released
	c.grant(c.do("l", "x", "0 60"), "60")
	b.send("l", "x", "1") // held for 60 s: must time out after 1 s
	// Meanwhile the sweeper must hand k to a waiter once a's lease ends
	// (the waiter's 30 s is only a bound on a sweeper that never does).
	if got := c.do("l", "k", "30"); grantRE.FindString(got) == "" {
		t.Fatalf("waiter on an expiring lease: %q", got)
	}
	// Never before the lease's end; how long after depends on the sweep
	// and on the machine's load, and is not bounded here.
	if el := time.Since(began); el < time.Second {
		t.Errorf("lease of 1 s expired after %v", el)
	}
	if got := b.reply(); got != "timeout" {
		t.Fatalf("acquire with timeout 1 on a held lock: %q", got)
	}
}

func TestLongLineClosesConnection(t *testing.T) {
	s := start(t, Config{})
	c := dial(t, s)
	if got := c.do(strings.Repeat("x", maxLine+1), "_", "_"); got != "error" {
		t.Fatalf("got %q", got)
	}
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open: %v", err)
	}
	// A line longer than the whole read buffer is drained, then refused.
	c2 := dial(t, s)
	if got := c2.do("l", strings.Repeat("k", 3*readBuffer), "1"); got != "error" {
		t.Fatalf("got %q", got)
	}
}

func TestCloseCancelsWaiters(t *testing.T) {
	s, err := Start("127.0.0.1:0", Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := dial(t, s), dial(t, s)
	a.grant(a.do("l", "k", "0"), "33")
	b.send("l", "k", "60")
	waitWaiters(t, s, "lock:k", 1)
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second): // the acquire's own timeout is 60 s
		t.Fatal("Close waited for a blocked acquire")
	}
}
