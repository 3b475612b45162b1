package loop

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
)

// wildcardScenario: * matches exactly one token, > one or more trailing
// ones; a connection gets a signal once however many of its patterns
// match, its own signals included (spec §B.9).
func wildcardScenario(t *testing.T, p profile) {
	ch := key("ch")
	a, b, exact, sender := p.dial(t), p.dial(t), p.dial(t), p.dial(t)
	a.do("listen", ch+".>", "", "ok")
	b.do("listen", ch+".*", "", "ok")
	b.do("listen", ch+".x", "", "ok") // a second match for b: still one push
	exact.do("listen", ch+".x.y", "", "ok")
	sender.do("signal", ch+".x", "hello there", "ok 2")
	a.expect("sig " + ch + ".x hello there")
	b.expect("sig " + ch + ".x hello there")
	sender.do("signal", ch+".x.y", "deep", "ok 2")
	a.expect("sig " + ch + ".x.y deep")
	exact.expect("sig " + ch + ".x.y deep")
	sender.do("signal", ch, "bare", "ok 0") // > needs at least one token
	// A signal to oneself: the reply comes first, then the push.
	a.do("signal", ch+".me", "self", "ok 2")
	a.expect("sig " + ch + ".me self")
	b.expect("sig " + ch + ".me self")
	b.do("unlisten", ch+".*", "", "ok")
	sender.do("signal", ch+".z", "after", "ok 1")
	a.expect("sig " + ch + ".z after")
	for _, c := range []*client{a, b, exact} {
		c.silent(50 * time.Millisecond)
	}
	a.do("listen", ch+".a>b", "", "error")
	a.do("listen", ch+".>.b", "", "error")
	a.do("signal", ch+".*", "x", "error") // signals go to literal channels
}

func TestSignalOverTheWire(t *testing.T)   { wildcardScenario(t, v2Profile()) }
func TestSignalOverTheWireRF(t *testing.T) { wildcardScenario(t, rfProfile()) }

// queueGroupScenario: each signal reaches exactly one of the three members
// of a queue group, round-robin over the join order, and the group counts
// once among the receivers; a plain subscriber still gets every signal
// (spec §B.9).
func queueGroupScenario(t *testing.T, p profile) {
	ch := key("qg")
	members := []*client{p.dial(t), p.dial(t), p.dial(t)}
	for _, m := range members {
		m.do("listen", ch, "workers", "ok")
	}
	all, sender := p.dial(t), p.dial(t)
	all.do("listen", ch, "", "ok")
	const rounds = 3
	for i := 0; i < rounds*len(members); i++ {
		sender.do("signal", ch, fmt.Sprint("job-", i), "ok 2")
		all.expect(fmt.Sprint("sig ", ch, " job-", i))
	}
	// Round-robin over the join order: if member 0's first job is s,
	// member m gets jobs (s+m)%3, (s+m)%3+3, …, each exactly once.
	s := -1
	for m, c := range members {
		for r := 0; r < rounds; r++ {
			var job int
			line := c.expect("sig " + ch + " *")
			if _, err := fmt.Sscanf(strings.Fields(line)[2], "job-%d", &job); err != nil {
				t.Fatal(err)
			}
			if s < 0 {
				s = job
			}
			if want := (s+m)%len(members) + r*len(members); job != want {
				t.Fatalf("member %d got job %d, want job %d (member 0 started at %d)", m, job, want, s)
			}
		}
	}
	for _, c := range members {
		c.silent(50 * time.Millisecond)
	}
	// A member that leaves is skipped; the group is per (pattern, name).
	members[1].do("unlisten", ch, "workers", "ok")
	members[1].do("listen", ch, "other", "ok")
	sender.do("signal", ch, "two-groups", "ok 3")
	all.expect("sig " + ch + " two-groups")
	members[1].expect("sig " + ch + " two-groups")
	got := 0
	for _, c := range []*client{members[0], members[2]} {
		if line, err := c.line(200 * time.Millisecond); err == nil {
			if !match(line, "sig "+ch+" two-groups") {
				t.Fatalf("got %q", line)
			}
			got++
		}
	}
	if got != 1 {
		t.Fatalf("%d of the remaining two members got the signal", got)
	}
}

func TestQueueGroupRoundRobin(t *testing.T)   { queueGroupScenario(t, v2Profile()) }
func TestQueueGroupRoundRobinRF(t *testing.T) { queueGroupScenario(t, rfProfile()) }

// slowConsumerScenario: a subscriber that stops reading is disconnected
// while another keeps receiving every signal (spec §B.9). The server runs
// without --write-timeout: the push backlog bound alone must act.
func slowConsumerScenario(t *testing.T, rf bool) {
	ts, err := startServer(Config{Profile: wireProfile(rf)}, engine.Config{Profile: wireProfile(rf)})
	if err != nil {
		t.Fatal(err)
	}
	defer ts.stop()
	ch := key("slow")
	slow, fast, sender := dial(t, ts), dial(t, ts), dial(t, ts)
	slow.c.(*net.TCPConn).SetReadBuffer(4096)
	slow.do("listen", ch, "", "ok")
	fast.do("listen", ch, "", "ok")
	// The slow subscriber also holds a lock someone waits for: its
	// disconnect must release it like any other (nothing it held is lost).
	lk, grant := key("slow-held"), "ok T 33"
	if rf {
		grant += " F"
	}
	slow.do("l", lk, "0", grant)
	waiter := dial(t, ts)
	waiter.send("l", lk, "60")
	payload := strings.Repeat("p", 200)
	// The slow subscriber never reads; the fast one reads everything.
	// ~11 MB per subscriber: more than the kernel socket buffers take, so
	// the server-side backlog of the non-reader must grow past its bound.
	const signals = 40000
	got := make(chan int, 1)
	go func() {
		n := 0
		fast.c.SetReadDeadline(time.Now().Add(30 * time.Second))
		for n < signals {
			if _, err := fast.rd.ReadString('\n'); err != nil {
				break
			}
			n++
		}
		got <- n
	}()
	sender.signalBurst(ch, payload, signals, 500, "ok *") // the count drops as slow is cut
	if n := <-got; n != signals {
		t.Fatalf("fast subscriber got %d of %d pushes", n, signals)
	}
	// The slow one was cut off: its subscription is gone.
	waitFor(t, func() bool {
		c := dial(t, ts)
		defer c.c.Close()
		c.send("signal", ch, "probe")
		line, _ := c.line(5 * time.Second)
		fast.line(time.Second) // drain the probe's push
		return line == "ok 1"
	})
	// And the server closed it: only fast, sender and waiter remain.
	// (Reading the slow socket dry to see the close would depend on TCP's
	// zero-window probes, backed off by now to seconds.)
	waitFor(t, func() bool { return ts.srv.Connections() == 3 })
	waiter.expect(grant)
}

func TestSlowConsumerDisconnected(t *testing.T)   { slowConsumerScenario(t, false) }
func TestSlowConsumerDisconnectedRF(t *testing.T) { slowConsumerScenario(t, true) }

// signalBurst sends n signals of payload on ch, batch at a time in
// flight, and checks every reply against want (see match).
func (c *client) signalBurst(ch, payload string, n, batch int, want string) {
	c.t.Helper()
	for i := 0; i < n; i += batch {
		k := min(batch, n-i)
		for range k {
			c.send("signal", ch, payload)
		}
		for range k {
			c.expect(want)
		}
	}
}
