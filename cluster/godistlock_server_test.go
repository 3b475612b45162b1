package cluster_test

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gdClient is a godistlock connection: a client (server_test.go)
// speaking godistlock's lines.
type gdClient struct{ *client }

func gdDial(t *testing.T, s *server) *gdClient { return &gdClient{dial(t, s)} }

func (c *gdClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

func (c *gdClient) reply() string {
	c.t.Helper()
	return c.client.reply(awaitFor)
}

func (c *gdClient) do(line string) string {
	c.t.Helper()
	c.send(line)
	return c.reply()
}

// closed reports whether the server closes the connection (EOF) without
// sending more.
func (c *gdClient) closed() bool {
	_ = c.c.SetReadDeadline(time.Now().Add(awaitFor))
	_, err := c.r.ReadByte()
	return err == io.EOF
}

// giveFence returns the fence of "GIVE <nonce> <fence>" for nonce.
func giveFence(t *testing.T, got, nonce string) uint64 {
	t.Helper()
	f := strings.Fields(got)
	if len(f) != 3 || f[0] != "GIVE" || f[1] != nonce {
		t.Fatalf("%q, want GIVE %s <fence>", got, nonce)
	}
	n, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", got, err)
	}
	return n
}

// TestGodistlockOnClusterMembers: the godistlock protocol on cluster
// members, its commands through the replicated log — ON grants with a
// fence, a second connection's ON waits (and IS meanwhile reports the
// holder's fence), REFRESH checks the fence, OFF hands the lock to the
// waiter with a greater fence, TRY on a taken lock says NO, pipelined
// commands are all answered, past the bound of answers owed, and
// after a half-close; every replica ends holding the same lock;
// a follower answers ERR not_leader and hangs up; and a waiting ON on a
// leader cut off from the others gets ERR not_leader when it is deposed.
func TestGodistlockOnClusterMembers(t *testing.T) {
	ss := startServersOver(t, 3, steadyRaft, godistlockNetconn)
	l1 := leaderOf(t, ss, nil)
	var follower *server
	for _, s := range ss {
		if s != l1 {
			follower = s
		}
	}
	fc := gdDial(t, follower)
	if got := fc.do("ON k 20000 f1"); got != "ERR f1 not_leader" {
		t.Fatalf("ON on a follower: %q, want ERR f1 not_leader", got)
	}
	if !fc.closed() {
		t.Fatal("the follower kept the connection open after ERR")
	}

	a, b := gdDial(t, l1), gdDial(t, l1)
	if got := a.do("HELLO 1 h1"); !strings.HasPrefix(got, "HELLO h1 ") {
		t.Fatalf("HELLO: %q", got)
	}
	f1 := giveFence(t, a.do("ON k 20000 a1"), "a1")
	b.send("ON k 20000 b1") // waits: no reply
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
		if _, waiting := l1.node.Engine().LockCounts(); waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second ON never waited")
		}
	}
	// Pipelined behind the waiting ON on the same connection: answered.
	b.send("IS k b2")
	b.send(fmt.Sprintf("REFRESH k %d 20000 b3", f1)) // not b's lock
	for _, want := range []string{fmt.Sprintf("LOCK b2 %d", f1), "NO b3"} {
		if got := b.reply(); got != want {
			t.Fatalf("pipelined behind a waiting ON: %q, want %q", got, want)
		}
	}
	if got, want := a.do(fmt.Sprintf("REFRESH k %d 20000 a2", f1)), fmt.Sprintf("GIVE a2 %d", f1); got != want {
		t.Fatalf("REFRESH by the holder: %q, want %q", got, want)
	}
	a.send("OFF k a3") // no reply; b is granted
	f2 := giveFence(t, b.reply(), "b1")
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
	if got := a.do("TRY k 1000 a4"); got != "NO a4" {
		t.Fatalf("TRY on a taken lock: %q, want NO a4", got)
	}
	// More pipelined than a session may be owed at once (128): parsing
	// stops, and resumes as the answers come, every one in order.
	var burst strings.Builder
	for i := range 300 {
		fmt.Fprintf(&burst, "IS k p%d\n", i)
	}
	if _, err := io.WriteString(a.c, burst.String()); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if got, want := a.reply(), fmt.Sprintf("LOCK p%d %d", i, f2); got != want {
			t.Fatalf("pipelined IS %d: %q, want %q", i, got, want)
		}
	}
	// A client that half-closes after its requests gets every answer,
	// then the close, which releases what it took.
	h := gdDial(t, l1)
	if _, err := io.WriteString(h.c, "TRY hc 20000 x1\nIS hc x2\n"); err != nil {
		t.Fatal(err)
	}
	if err := h.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	hf := giveFence(t, h.reply(), "x1")
	if got, want := h.reply(), fmt.Sprintf("LOCK x2 %d", hf); got != want {
		t.Fatalf("after a half-close: %q, want %q", got, want)
	}
	if !h.closed() {
		t.Fatal("the half-closed connection was not closed after its answers")
	}
	if got := a.do("IS hc a6"); got != "NO a6" {
		t.Fatalf("IS after the half-closed client left: %q, want NO a6", got)
	}
	// Every replica applied the same: one lock held, nobody waiting.
	for _, s := range ss {
		for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
			if held, waiting := s.node.Engine().LockCounts(); held == 1 && waiting == 0 {
				break
			}
			if time.Now().After(deadline) {
				held, waiting := s.node.Engine().LockCounts()
				t.Fatalf("member %s: %d held, %d waiting; want 1, 0", s.id, held, waiting)
			}
		}
	}

	// a waits for b's lock; then the leader is cut off.
	a.send("ON k 20000 a5")
	for deadline := time.Now().Add(awaitFor); ; time.Sleep(2 * time.Millisecond) {
		if _, waiting := l1.node.Engine().LockCounts(); waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ON never waited")
		}
	}
	for _, s := range ss {
		if s != l1 {
			s.trans.Disconnect(l1.addr)
			l1.trans.Disconnect(s.addr)
		}
	}
	if got := a.reply(); got != "ERR a5 not_leader" {
		t.Fatalf("waiting ON on a deposed leader: %q, want ERR a5 not_leader", got)
	}
	if !a.closed() {
		t.Fatal("the deposed leader kept the connection open after ERR")
	}
}
