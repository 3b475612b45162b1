package loop

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// The godistlock suite runs as subtests of one test so that its server
// (dflockd + godistlock listeners on one engine) starts and stops once:
// gnet's Stop takes about 500 ms.
func TestGodistlock(t *testing.T) {
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The godistlock listener follows the line protocol's, which
	// startServer binds.
	ts, err := startServer(Config{
		ReadTimeout:  time.Second,
		Listeners:    []net.Listener{gl},
		GodistlockID: "node-1",
		Version:      "v9",
	}, engine.Config{MaxLocks: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.stop)
	g := &gdServer{ts: ts, addr: gl.Addr().String()}

	t.Run("Hello", g.testHello)
	t.Run("GodistlockHoldsDflockdWaits", g.testGodistlockHolds)
	t.Run("DflockdHoldsGodistlockWaits", g.testDflockdHolds)
	t.Run("FIFOAcrossProtocols", g.testFIFO)
	t.Run("PipelinedNonces", g.testPipelined)
	t.Run("RefreshAndLease", g.testRefresh)
	t.Run("RepeatedOnExtends", g.testRepeatedOn)
	t.Run("OffWithdrawsWait", g.testOffWithdraws)
	t.Run("DisconnectReleases", g.testDisconnect)
	t.Run("Stats", g.testStats)
	t.Run("Malformed", g.testMalformed)
	t.Run("IdleIsNotTimedOut", g.testIdle)
}

type gdServer struct {
	ts   *testServer
	addr string
}

// dialGD opens a godistlock connection; its send takes whole lines.
func (g *gdServer) dialGD(t *testing.T) *client {
	t.Helper()
	c, err := net.Dial("tcp", g.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, rd: bufio.NewReader(c)}
}

// gd sends one godistlock line (LF added) and, if want is not empty,
// checks the next reply against it ("*" matches any word).
func gd(c *client, line, want string) []string {
	c.t.Helper()
	c.raw(line + "\n")
	if want == "" {
		return nil
	}
	return strings.Fields(c.expect(want))
}

// fenceOf is the fence a dflockd token carries in its first 16 hex digits.
func fenceOf(t *testing.T, token string) uint64 {
	t.Helper()
	f, err := strconv.ParseUint(token[:16], 16, 64)
	if err != nil {
		t.Fatalf("token %q: %v", token, err)
	}
	return f
}

// field returns word i of a reply line.
func field(line string, i int) string { return strings.Fields(line)[i] }

func atou(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("fence %q: %v", s, err)
	}
	return v
}

func (g *gdServer) waiters(t *testing.T, k string) int { return waitersOnServer(t, g.ts, k) }

func (g *gdServer) testHello(t *testing.T) {
	c := g.dialGD(t)
	gd(c, "HELLO 0.1 n1", "HELLO n1 node-1 v9")
}

func (g *gdServer) testGodistlockHolds(t *testing.T) {
	k := key("gdfoo")
	a := g.dialGD(t)
	f1 := atou(t, gd(a, "ON "+k+" 30000 a1", "GIVE a1 *")[2])
	d := dial(t, g.ts)
	d.send("l", k, "10 30")
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	d.silent(50 * time.Millisecond)
	gd(a, "IS "+k+" a2", "LOCK a2 "+strconv.FormatUint(f1, 10))
	gd(a, "OFF "+k+" a3", "") // no reply to OFF
	tok := d.expect("ok T 30")[3:35]
	f2 := fenceOf(t, tok)
	if f2 <= f1 {
		t.Fatalf("dflockd fence %d not after godistlock fence %d", f2, f1)
	}
	gd(a, "IS "+k+" a4", "LOCK a4 "+strconv.FormatUint(f2, 10))
	d.do("r", k, tok, "ok")
	gd(a, "IS "+k+" a5", "NO a5")
}

func (g *gdServer) testDflockdHolds(t *testing.T) {
	k := key("gdbar")
	d := dial(t, g.ts)
	tok := d.do("l", k, "0 30", "ok T 30")[1]
	a := g.dialGD(t)
	gd(a, "ON "+k+" 30000 w1", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	// The parked ON does not stop the connection from answering.
	gd(a, "IS "+k+" i1", "LOCK i1 "+strconv.FormatUint(fenceOf(t, tok), 10))
	gd(a, "TRY "+k+" 1000 t1", "NO t1")
	d.do("r", k, tok, "ok")
	f := atou(t, field(a.expect("GIVE w1 *"), 2))
	if f <= fenceOf(t, tok) {
		t.Fatalf("godistlock fence %d not after dflockd fence %d", f, fenceOf(t, tok))
	}
	d.do("l", k, "0 30", "timeout")
	gd(a, "OFF "+k+" o1", "")
	gd(a, "IS "+k+" i2", "NO i2") // answered after the OFF took effect
	d.do("l", k, "0 30", "ok T 30")
}

func (g *gdServer) testFIFO(t *testing.T) {
	k := key("gdfifo")
	h := dial(t, g.ts)
	tok := h.do("l", k, "0 30", "ok T 30")[1]
	g1, d1, g2, d2 := g.dialGD(t), dial(t, g.ts), g.dialGD(t), dial(t, g.ts)
	gd(g1, "ON "+k+" 30000 g1", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	d1.send("l", k, "10 30")
	waitFor(t, func() bool { return g.waiters(t, k) == 2 })
	gd(g2, "ON "+k+" 30000 g2", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 3 })
	d2.send("l", k, "10 30")
	waitFor(t, func() bool { return g.waiters(t, k) == 4 })

	last := fenceOf(t, tok)
	next := func(f uint64) {
		t.Helper()
		if f <= last {
			t.Fatalf("fence %d not after %d", f, last)
		}
		last = f
	}
	h.do("r", k, tok, "ok")
	next(atou(t, field(g1.expect("GIVE g1 *"), 2)))
	d1.silent(30 * time.Millisecond)
	gd(g1, "OFF "+k+" x", "")
	t1 := d1.expect("ok T 30")[3:35]
	next(fenceOf(t, t1))
	g2.silent(30 * time.Millisecond)
	d1.do("r", k, t1, "ok")
	next(atou(t, field(g2.expect("GIVE g2 *"), 2)))
	d2.silent(30 * time.Millisecond)
	gd(g2, "OFF "+k+" y", "")
	next(fenceOf(t, d2.expect("ok T 30")[3:35]))
}

func (g *gdServer) testPipelined(t *testing.T) {
	k1, k2 := key("gdp1"), key("gdp2")
	hold := g.dialGD(t)
	f2 := gd(hold, "ON "+k2+" 30000 h", "GIVE h *")[2]
	c := g.dialGD(t)
	// One write: a blocking ON between requests that complete at once.
	c.raw("HELLO 1 n1\nON " + k2 + " 30000 n2\nTRY " + k1 + " 5000 n3\nIS " + k2 + " n4\nIS " + k1 + " n5\nTRY " + k2 + " 5000 n6\nSTATS n7\n")
	c.expect("HELLO n1 node-1 v9")
	f3 := strings.Fields(c.expect("GIVE n3 *"))[2]
	c.expect("LOCK n4 " + f2)
	c.expect("LOCK n5 " + f3)
	c.expect("NO n6")
	for range 4 {
		c.expect("STATS n7 * *")
	}
	c.expect("STATSEND n7")
	gd(hold, "OFF "+k2+" x", "")
	c.expect("GIVE n2 *")
	gd(c, "IS "+k2+" n8", "LOCK n8 *")
}

func (g *gdServer) testRefresh(t *testing.T) {
	// Leases long enough that a stalled machine does not end one before
	// the request that relies on it: the first lease outlasts the three
	// requests before the refresh, the refreshed one the wait for the
	// first to end and the IS after it.
	const (
		firstLease     = 3 * time.Second
		refreshedLease = 6 * time.Second
	)
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	k := key("gdref")
	a, b := g.dialGD(t), g.dialGD(t)
	f := gd(a, "TRY "+k+" "+ms(firstLease)+" r1", "GIVE r1 *")[2]
	// After the grant: the first lease ends by granted+firstLease.
	granted := time.Now()
	gd(b, "REFRESH "+k+" "+f+" 5000 r2", "NO r2") // not b's lock
	gd(a, "REFRESH "+k+" 999999999 5000 r3", "NO r3")
	refreshed := time.Now() // before the refresh: the refreshed lease cannot start earlier
	gd(a, "REFRESH "+k+" "+f+" "+ms(refreshedLease)+" r4", "GIVE r4 "+f)
	// Past the first lease: only the refresh keeps a's lock now.
	time.Sleep(time.Until(granted.Add(firstLease + 100*time.Millisecond)))
	gd(b, "IS "+k+" r5", "LOCK r5 "+f)
	// The lease is the ON/TRY timeout in ms: b's ON is granted when the
	// refreshed lease ends, never before.
	gd(b, "ON "+k+" 30000 r6", "GIVE r6 *")
	if el := time.Since(refreshed); el < refreshedLease {
		t.Fatalf("granted %v after the refresh was sent, before the refreshed %v lease ended", el, refreshedLease)
	}
	gd(a, "REFRESH "+k+" "+f+" 2000 r7", "NO r7")
}

func (g *gdServer) testOffWithdraws(t *testing.T) {
	k := key("gdwd")
	d := dial(t, g.ts)
	tok := d.do("l", k, "0 30", "ok T 30")[1]
	a := g.dialGD(t)
	gd(a, "ON "+k+" 30000 on1", "")
	gd(a, "ON "+k+" 30000 on2", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 2 })
	gd(a, "OFF "+k+" off1", "NO on1") // withdraws the oldest wait
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	d.do("r", k, tok, "ok")
	a.expect("GIVE on2 *")
	gd(a, "OFF "+k+" off2", "")
	gd(a, "OFF "+k+" off3", "") // nothing to release: still silent
	gd(a, "IS "+k+" is", "NO is")
}

func (g *gdServer) testDisconnect(t *testing.T) {
	k := key("gddisc")
	a, b := g.dialGD(t), g.dialGD(t)
	gd(a, "ON "+k+" 30000 a", "GIVE a *")
	gd(b, "ON "+k+" 30000 b", "")
	c := g.dialGD(t)
	gd(c, "ON "+k+" 30000 c", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 2 })
	b.c.Close() // a waiter leaves the queue
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	a.c.Close() // the holder's lock is released
	c.expect("GIVE c *")
}

func (g *gdServer) testStats(t *testing.T) {
	a := g.dialGD(t)
	gd(a, "ON "+key("gdst")+" 30000 s0", "GIVE s0 *")
	a.raw("STATS s1\n")
	seen := map[string]int64{}
	for range 4 {
		f := strings.Fields(a.expect("STATS s1 * *"))
		v, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seen[f[2]] = v
	}
	a.expect("STATSEND s1")
	for _, name := range []string{"connections", "locks", "waiters", "keys"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("STATS lacks %s: %v", name, seen)
		}
	}
	if seen["connections"] < 1 || seen["locks"] < 1 || seen["keys"] < 1 {
		t.Errorf("STATS = %v", seen)
	}
}

func (g *gdServer) testMalformed(t *testing.T) {
	k := key("gdbad")
	for _, tt := range []struct{ in, want string }{
		{"ON " + k + " abc m1", "ERR m1 invalid_timeout"},
		{"ON " + k + " 100", "ERR - wrong_argument_count"},
		{"BOGUS m2", "ERR - unknown_command"},
		{"REFRESH " + k + " x 1 m3", "ERR m3 invalid_fence"},
		{"IS " + strings.Repeat("k", 2000) + " m4", "ERR - line_too_long"},
	} {
		c := g.dialGD(t)
		gd(c, "HELLO 1 ok", "HELLO ok node-1 v9")
		gd(c, tt.in, tt.want)
		c.closed()
	}
	// An ERR closes the connection, which releases what it held.
	c := g.dialGD(t)
	gd(c, "ON "+k+" 30000 h", "GIVE h *")
	gd(c, "ON "+k+" -5 x", "ERR x invalid_timeout")
	c.closed()
	gd(g.dialGD(t), "ON "+k+" 1000 t", "GIVE t *")
}

func (g *gdServer) testIdle(t *testing.T) {
	// The read timeout is 1 s: an idle connection stays, a started line
	// that does not end is closed with ERR.
	idle, slow := g.dialGD(t), g.dialGD(t)
	slow.raw("IS foo")
	time.Sleep(2500 * time.Millisecond)
	gd(idle, "IS "+key("gdidle")+" i", "NO i")
	slow.expect("ERR - read_timeout")
	slow.closed()
}

// An ON (or TRY) for a lock the same connection holds is answered at once
// with the same fence and restarts the lease, as godistlock's own server
// does: a client re-sending ON to extend its lock must not wait out its
// own lease. Another connection's ON still waits.
func (g *gdServer) testRepeatedOn(t *testing.T) {
	// renewEvery leaves lease-renewEvery (3 s) of margin for a stalled
	// machine before a's lease would run out between two renewals.
	const (
		lease      = 4 * time.Second
		renewEvery = time.Second
	)
	ls := strconv.FormatInt(lease.Milliseconds(), 10)
	k := key("gdre")
	a, b := g.dialGD(t), g.dialGD(t)
	// A first lease of a minute: a repeated ON that waited for it to end
	// would outlast expect's wait, so its GIVE shows it answered at once.
	f := gd(a, "ON "+k+" 60000 o1", "GIVE o1 *")[2]
	gd(a, "ON "+k+" 60000 o2", "GIVE o2 "+f)
	gd(b, "ON "+k+" 30000 w", "")
	waitFor(t, func() bool { return g.waiters(t, k) == 1 })
	// A repeated TRY restarts the lease with its own length: from now on
	// a holds the lock for lease after its latest renewal. Renew past the
	// first of these leases: b must not get the lock meanwhile (a TRY
	// after a lost lock would answer NO).
	gd(a, "TRY "+k+" "+ls+" t0", "GIVE t0 "+f)
	first := time.Now() // after the reply: the first short lease ends by first+lease
	var renewed time.Time
	for i := 1; ; i++ {
		time.Sleep(renewEvery)
		past := time.Since(first) > lease // the last renewal is sent past it
		n := "t" + strconv.Itoa(i)
		renewed = time.Now() // before the renewal: its lease cannot start earlier
		gd(a, "TRY "+k+" "+ls+" "+n, "GIVE "+n+" "+f)
		if past {
			break
		}
	}
	b.silent(10 * time.Millisecond)
	// Once a stops extending, its lease ends and b is granted a new fence,
	// no sooner than a lease after the last renewal.
	got := field(b.expect("GIVE w *"), 2)
	if el := time.Since(renewed); el < lease {
		t.Fatalf("b granted %v after a's last renewal was sent, before its %v lease ended", el, lease)
	}
	if atou(t, got) <= atou(t, f) {
		t.Fatalf("b's fence %s not after a's %s", got, f)
	}
	gd(a, "ON "+k+" 2000 o3", "") // now a waits behind b
	gd(a, "IS "+k+" i", "LOCK i "+got)
}
