package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/internal/lincheck"
)

// Linearizability of a cluster of real member processes under a nemesis
// that kills, pauses and restarts them (issue #12): concurrent clients
// speak the line protocol, following redirects; their history of
// try-locks with short leases, releases, counters and KV registers is
// checked by porcupine against internal/lincheck's model, which also
// holds every grant to the previous holder's lease measured from its send
// time; after healing, every replica must reach the same state.
//
// The check is bounded by construction, whatever the run's length: keys
// rotate (lincheck.Rotation), so a partition, one key of one generation,
// holds at most nemesisGenerationOps operations; a client leaves a key for
// the rest of its generation once it has an operation of unknown outcome
// there (and its connection: an unknown outcome always drops it), so a
// partition holds at most nemesisClients of them; lincheck.Check checks
// one partition at a time within nemesisCheckWithin.

const (
	nemesisClients = 6
	// nemesisPace is the least time between two requests of a client:
	// it bounds the history (porcupine's memory grows with the square of
	// a partition's length) to about 6 × 1/pace operations a second.
	nemesisPace = 8 * time.Millisecond
	// nemesisGenerationOps: the most operations of a partition. A
	// generation lasts about 5 s at full pace, several leases (1 or 2 s),
	// so abandoned leases still run out while others try the lock.
	nemesisGenerationOps = 4000
	// nemesisReplyWithin: a reply later than this is an unknown outcome
	// (a paused leader's clients give up and go elsewhere).
	nemesisReplyWithin = 2 * time.Second
	// nemesisCheckWithin bounds porcupine's search (a 60 s history of
	// bounded partitions, legal or not, takes well under a second);
	// running out is a failure, not a pass.
	nemesisCheckWithin = 2 * time.Minute
)

// Keys: four locks contended by every client, two counters, two KV
// registers, renamed each generation (lincheck.Key); each key of each
// generation is a porcupine partition.
var (
	nemesisLocks    = []string{"L0", "L1", "L2", "L3"}
	nemesisCounters = []string{"C0", "C1"}
	nemesisRegs     = []string{"K0", "K1"}
)

// nemesisDuration is DFLOCKD_NEMESIS_SECONDS (CI's own step runs 60),
// else 10 s: enough for a few faults under `go test ./...`.
func nemesisDuration(t *testing.T) time.Duration {
	s := os.Getenv("DFLOCKD_NEMESIS_SECONDS")
	if s == "" {
		return 10 * time.Second
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("DFLOCKD_NEMESIS_SECONDS=%q: want a number of seconds", s)
	}
	return time.Duration(n) * time.Second
}

func TestClusterLinearizableUnderNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process, tens of seconds")
	}
	dur := nemesisDuration(t)
	ms := startMembers(t, 3)
	_, _ = leader(t, ms, nil, 15*time.Second)

	h := lincheck.NewHistory()
	rot := lincheck.NewRotation(nemesisGenerationOps)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	stop := func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
	// Should the test end early (a member that does not restart), the
	// clients stop before the members' cleanups run: cleanups run last
	// registered first.
	t.Cleanup(stop)
	for id := range nemesisClients {
		c := &nemesisClient{t: t, id: id, ms: ms, h: h, rot: rot, rng: rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano()))),
			gen: -1, held: map[string]string{}, seen: map[string]string{}, left: map[string]bool{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(done)
		}()
	}
	start := time.Now()
	f := runNemesis(t, ms, start.Add(dur))
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	stop()

	// Healed: every member is up (the nemesis ends with its last fault
	// undone) and must reach the same state.
	digests := replicasConverge(t, ms)

	ops, unknown := h.Operations()
	model := lincheck.Model.ToModel()
	rep := lincheck.Check(model, ops, nemesisCheckWithin)
	grants, takeovers, closest := grantChecks(t, ops)
	leases := fmt.Sprintf("%d grants, %d after a lease ran out", grants, takeovers)
	if takeovers > 0 {
		leases += fmt.Sprintf(" (the closest %v after it could end)", closest.Round(time.Microsecond))
	}
	t.Logf("nemesis: %d operations (%d of unknown outcome), faults: %d kill+restart, %d pause+resume, over %v, "+
		"keys rotated every %d operations; linearizable: %v; %s; %s",
		len(ops), unknown, f.kills, f.pauses, elapsed, nemesisGenerationOps, rep, leases, digests)
	switch rep.Result {
	case porcupine.Unknown:
		t.Fatalf("nemesis: the linearizability check did not finish within %v: %d partitions, the largest %d operations, "+
			"the unfinished one %d", nemesisCheckWithin, rep.Partitions, rep.Largest, len(rep.Failed))
	case porcupine.Illegal:
		path := "none"
		out, err := os.CreateTemp("", "dflockd-nemesis-*.html")
		if err == nil {
			path = out.Name()
			err = porcupine.Visualize(model, rep.Info, out)
			out.Close()
		}
		if err != nil {
			t.Errorf("nemesis: visualization: %v", err)
		}
		t.Fatalf("nemesis: the history is not linearizable (a partition of %d operations); visualization: %s", len(rep.Failed), path)
	}
}

// grantChecks checks grants of the same key outside the model, to say
// which grants when one fails (the model checks both, in its
// linearization): of two grants, one returned before the other was sent
// has the smaller fence; and a grant came no earlier than the previous
// holder's lease could end (its FreeAfter), unless that holder released
// it. It returns how many grants there were, how many took a lock whose
// lease had run out, and by how little the closest did.
func grantChecks(t *testing.T, ops []porcupine.Operation) (grants, takeovers int, closest time.Duration) {
	t.Helper()
	released := map[string]bool{} // tokens released, or maybe (unknown outcome)
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		in, out := op.Input.(lincheck.Input), op.Output.(lincheck.Output)
		switch {
		case in.Kind == lincheck.Acquire && out.OK:
			byKey[in.Key] = append(byKey[in.Key], op)
			grants++
		case in.Kind == lincheck.Release && (out.OK || out.Unknown):
			released[in.Token] = true
		}
	}
	out := func(op porcupine.Operation) lincheck.Output { return op.Output.(lincheck.Output) }
	desc := func(op porcupine.Operation) string { return lincheck.Model.DescribeOperation(op.Input, op.Output) }
	closest = time.Duration(lincheck.Never)
	for key, gs := range byKey {
		// Fences, in real-time order.
		byReturn := slices.Clone(gs)
		slices.SortFunc(byReturn, func(a, b porcupine.Operation) int { return cmp.Compare(a.Return, b.Return) })
		slices.SortFunc(gs, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		var top porcupine.Operation // the largest fence returned so far
		i := 0
		for _, g := range gs {
			for ; i < len(byReturn) && byReturn[i].Return < g.Call; i++ {
				if i == 0 || out(byReturn[i]).Fence > out(top).Fence {
					top = byReturn[i]
				}
			}
			if i > 0 && out(top).Fence >= out(g).Fence {
				t.Errorf("nemesis: %s: fence %d granted after fence %d had returned: %s; then %s", key,
					out(g).Fence, out(top).Fence, desc(top), desc(g))
			}
		}
		// Leases, in grant (fence) order.
		slices.SortFunc(gs, func(a, b porcupine.Operation) int { return cmp.Compare(out(a).Fence, out(b).Fence) })
		for j := 1; j < len(gs); j++ {
			prev, g := gs[j-1], gs[j]
			if released[out(prev).Token] {
				continue
			}
			takeovers++
			margin := time.Duration(g.Return - out(prev).FreeAfter)
			closest = min(closest, margin)
			if margin < 0 {
				t.Errorf("nemesis: %s: granted %v before the previous holder's lease could end: %s; then %s", key,
					-margin, desc(prev), desc(g))
			}
		}
	}
	return grants, takeovers, closest
}

// nemesisFaults counts what the nemesis did.
type nemesisFaults struct{ kills, pauses int }

// runNemesis, until the deadline: a healthy spell, then a fault on one
// member (the leader three times in four): SIGKILL and a restart on its
// raft directory after a while, or SIGSTOP and SIGCONT after a while. At
// most one member is down at a time, and none when it returns.
func runNemesis(t *testing.T, ms []*member, until time.Time) nemesisFaults {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 12))
	var f nemesisFaults
	for time.Now().Before(until) {
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		l, _ := leader(t, ms, nil, 15*time.Second)
		target := l
		if rng.IntN(4) == 0 {
			target = ms[rng.IntN(len(ms))]
		}
		role := "a follower"
		if target == l {
			role = "the leader"
		}
		// From shorter than an election timeout (1 s) to several.
		down := time.Duration(300+rng.IntN(2700)) * time.Millisecond
		if rng.IntN(2) == 0 {
			t.Logf("fault: SIGKILL %s (%s), restart after %v", target.id, role, down)
			target.signal(syscall.SIGKILL)
			time.Sleep(down)
			target.start()
			f.kills++
		} else {
			t.Logf("fault: SIGSTOP %s (%s), SIGCONT after %v", target.id, role, down)
			target.signal(syscall.SIGSTOP)
			time.Sleep(down)
			target.signal(syscall.SIGCONT)
			f.pauses++
		}
	}
	return f
}

// replicasConverge polls every member's stats until all have reported a
// state digest at the same applied index, and compares them there; it
// describes the outcome for the summary. The indexes are not equal at one
// instant: a follower learns that an entry is committed only with the
// next one (the leader's clock tick, every second), so it applies each
// entry about when the leader applies the next. Hence digests are kept
// per index and member, and any two at one index must agree.
func replicasConverge(t *testing.T, ms []*member) string {
	t.Helper()
	type replica struct {
		Cluster *struct {
			AppliedIndex *uint64 `json:"applied_index"`
			StateDigest  string  `json:"state_digest"`
		} `json:"cluster"`
	}
	seen := map[uint64]map[string]string{} // index → member → digest
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, m := range ms {
			reply := ask(m.client, "stats", "_", "_", 2*time.Second)
			doc, ok := strings.CutPrefix(reply, "ok ")
			var r replica
			if !ok || json.Unmarshal([]byte(doc), &r) != nil {
				last = fmt.Sprintf("%s: stats %.120q", m.id, reply)
				continue
			}
			if r.Cluster == nil || r.Cluster.AppliedIndex == nil || r.Cluster.StateDigest == "" {
				t.Errorf("nemesis: %s: stats has no cluster object with applied_index and state_digest: %.300s", m.id, doc)
				return "digests not compared"
			}
			i, d := *r.Cluster.AppliedIndex, r.Cluster.StateDigest
			last = fmt.Sprintf("%s at index %d", m.id, i)
			if seen[i] == nil {
				seen[i] = map[string]string{}
			}
			for id, other := range seen[i] {
				if other != d {
					t.Errorf("nemesis: at applied index %d, %s's state digest is %s, %s's %s", i, id, other, m.id, d)
					return fmt.Sprintf("digests DIFFER at index %d", i)
				}
			}
			seen[i][m.id] = d
			if len(seen[i]) == len(ms) {
				return fmt.Sprintf("digests agree at index %d", i)
			}
		}
	}
	t.Errorf("nemesis: the members did not all report a digest at one applied index within 20 s (last: %s)", last)
	return "replicas did not converge"
}

// nemesisClient is one client: one connection at a time, to the member
// it believes leads.
type nemesisClient struct {
	t   *testing.T
	id  int
	ms  []*member
	h   *lincheck.History
	rot *lincheck.Rotation
	rng *rand.Rand
	seq int

	// Of the generation gen: the keys it has left after an unknown
	// outcome there, and what it learnt. Older generations' keys are
	// never used again.
	gen  int64
	left map[string]bool
	held map[string]string // lock key → token it was granted
	seen map[string]string // KV key → value it last saw or wrote ("" absent)

	addr   string // where to go next ("" = any other member)
	failed string // the member that failed last
	c      net.Conn
	r      *bufio.Reader
	conn   int // the history's number for c
}

func (c *nemesisClient) run(done <-chan struct{}) {
	defer c.drop()
	next := time.Now()
	for {
		select {
		case <-done:
			return
		default:
		}
		time.Sleep(time.Until(next))
		next = time.Now().Add(nemesisPace)
		if !c.step() {
			return
		}
	}
}

// roundTripOutcome is what came of a round trip.
type roundTripOutcome int

const (
	outcomeNotSent  roundTripOutcome = iota // no connection: nothing was sent
	outcomeUnknown                          // sent; no reply, or error_not_leader
	outcomeAnswered                         // a reply
)

// step runs one random operation and records it; false after an
// unexpected reply (reported).
func (c *nemesisClient) step() bool {
	if g := c.rot.Next(); g != c.gen {
		c.gen = g
		clear(c.left)
		clear(c.held) // their leases run out
		clear(c.seen)
	}
	var in lincheck.Input
	var cmd, arg string
	p := c.rng.IntN(100)
	switch {
	case p < 45:
		in.Key = nemesisLocks[c.rng.IntN(len(nemesisLocks))]
	case p < 70:
		in.Key = nemesisCounters[c.rng.IntN(len(nemesisCounters))]
	default:
		in.Key = nemesisRegs[c.rng.IntN(len(nemesisRegs))]
	}
	if in.Key = lincheck.Key(in.Key, c.gen); c.left[in.Key] {
		return true // its ticket goes unused
	}
	switch {
	case p < 45:
		if tok := c.held[in.Key]; tok != "" && c.rng.IntN(2) == 0 {
			in.Kind, in.Token, cmd, arg = lincheck.Release, tok, "r", tok
			delete(c.held, in.Key) // released, refused or unknown: done with it
		} else {
			lease := 1 + c.rng.IntN(4)/3 // 1 s, or 2
			in.Kind, in.Lease, cmd, arg = lincheck.Acquire, int64(lease)*int64(time.Second), "l", fmt.Sprint("0 ", lease)
		}
	case p < 70:
		if c.rng.IntN(5) == 0 {
			in.Kind, cmd, arg = lincheck.CounterGet, "get", "_"
		} else {
			in.Kind, cmd, arg = lincheck.Incr, "incr", "1"
		}
	default:
		c.seq++
		value := fmt.Sprintf("c%d.%d", c.id, c.seq)
		switch q := c.rng.IntN(10); {
		case q < 3:
			in.Kind, in.Value, cmd, arg = lincheck.KSet, value, "kset", value
		case q < 7:
			in.Kind, cmd, arg = lincheck.KGet, "kget", "_"
		default:
			in.Kind, in.Old, in.Value, cmd = lincheck.KCas, c.seen[in.Key], value, "kcas"
			arg = in.Old + "\t" + value + "\t0"
		}
	}

	call, ret, conn, reply, oc := c.roundTrip(cmd, in.Key, arg)
	if oc == outcomeNotSent {
		return true
	}
	if oc == outcomeUnknown && (in.Kind == lincheck.KGet || in.Kind == lincheck.CounterGet) {
		return true // a read that may not have happened tells nothing
	}
	in.Call, in.Return = call, ret
	out, ok := c.interpret(in, reply, oc)
	if !ok {
		c.t.Errorf("nemesis: client %d: %s %s %q: unexpected reply %q", c.id, cmd, in.Key, arg, reply)
		return false
	}
	c.h.Add(c.id, conn, in, out)
	if out.Unknown {
		c.left[in.Key] = true // and the connection is gone: roundTrip dropped it
	}
	return true
}

// interpret turns a reply into the model's output, and keeps what the
// client learnt (tokens, values).
func (c *nemesisClient) interpret(in lincheck.Input, reply string, oc roundTripOutcome) (lincheck.Output, bool) {
	if oc == outcomeUnknown {
		if in.Kind == lincheck.KCas || in.Kind == lincheck.KSet {
			delete(c.seen, in.Key) // the next cas may conflict: fine
		}
		return lincheck.Output{Unknown: true}, true
	}
	var out lincheck.Output
	switch in.Kind {
	case lincheck.Acquire:
		if reply == "timeout" {
			return out, true
		}
		f := strings.Fields(reply)
		if len(f) != 3 || f[0] != "ok" || f[2] != strconv.FormatInt(in.Lease/int64(time.Second), 10) {
			return out, false
		}
		tok, ok := fence.ParseToken([]byte(f[1]))
		if !ok {
			return out, false
		}
		out.OK, out.Token, out.Fence = true, f[1], tok.Fence
		// One grant in three is abandoned on an open connection: its
		// lease runs out while the others try the lock, the case where
		// lease safety shows.
		if c.rng.IntN(3) != 0 {
			c.held[in.Key] = f[1]
		}
	case lincheck.Release:
		if reply != "ok" && reply != "error" {
			return out, false
		}
		out.OK = reply == "ok"
	case lincheck.Incr, lincheck.CounterGet:
		v, ok := strings.CutPrefix(reply, "ok ")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return out, false
		}
		out.N = n
	case lincheck.KSet:
		if reply != "ok" {
			return out, false
		}
		out.OK = true
		c.seen[in.Key] = in.Value
	case lincheck.KGet:
		if reply == "nil" {
			delete(c.seen, in.Key)
			return out, true
		}
		v, ok := strings.CutPrefix(reply, "ok ")
		if !ok {
			return out, false
		}
		out.OK, out.Value = true, v
		c.seen[in.Key] = v
	case lincheck.KCas:
		switch reply {
		case "ok":
			out.OK = true
			c.seen[in.Key] = in.Value
		case "cas_conflict":
		default:
			return out, false
		}
	}
	return out, true
}

// roundTrip sends one request to the member believed to lead and reads
// its reply. It returns when the request was sent and when the reply
// came (on the history's clock), and on which connection. A redirect, a
// lost connection or a late reply leaves the outcome unknown, and the
// connection closed.
func (c *nemesisClient) roundTrip(cmd, key, arg string) (call, ret int64, conn int, reply string, oc roundTripOutcome) {
	if c.c == nil && !c.dial() {
		return 0, 0, 0, "", outcomeNotSent
	}
	conn = c.conn
	_ = c.c.SetDeadline(time.Now().Add(nemesisReplyWithin))
	call = c.h.Now()
	if _, err := fmt.Fprintf(c.c, "%s\n%s\n%s\n", cmd, key, arg); err != nil {
		c.fail()
		return call, 0, conn, "", outcomeUnknown
	}
	line, err := c.r.ReadString('\n')
	ret = c.h.Now()
	if err != nil {
		c.fail()
		return call, ret, conn, "", outcomeUnknown
	}
	reply = strings.TrimSuffix(line, "\n")
	if hint, ok := strings.CutPrefix(reply, "error_not_leader"); ok {
		c.fail()
		c.addr = c.member(strings.TrimSpace(hint))
		return call, ret, conn, reply, outcomeUnknown
	}
	return call, ret, conn, reply, outcomeAnswered
}

// dial connects to c.addr, or to a member other than the one that failed
// last, and keeps the connection if that member leads: only a leader
// answers barrier ok, a follower redirects it. Requests then go to a
// leader but in a failover, which keeps redirects (outcome unknown) out
// of the history. False, after a short pause when no leader is known, if
// there is no connection to a leader.
func (c *nemesisClient) dial() bool {
	addr := c.addr
	if addr == "" {
		for addr == "" || (addr == c.failed && len(c.ms) > 1) {
			addr = c.ms[c.rng.IntN(len(c.ms))].client
		}
	}
	c.addr, c.failed = "", addr
	nc, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return false
	}
	r := bufio.NewReader(nc)
	_ = nc.SetDeadline(time.Now().Add(nemesisReplyWithin))
	line, err := "", error(nil)
	if _, err = io.WriteString(nc, "barrier\n_\n_\n"); err == nil {
		line, err = r.ReadString('\n')
	}
	if err != nil || line != "ok\n" {
		nc.Close() // nothing was granted on it
		hint, _ := strings.CutPrefix(strings.TrimSpace(line), "error_not_leader")
		if c.addr = c.member(strings.TrimSpace(hint)); c.addr == "" || c.addr == addr {
			c.addr = ""
			time.Sleep(50 * time.Millisecond)
		}
		return false
	}
	c.addr, c.failed, c.c, c.r, c.conn = addr, "", nc, r, c.h.Conn()
	return true
}

// fail drops the connection after a failure there, and forgets where it
// led.
func (c *nemesisClient) fail() {
	c.failed = c.addr
	c.addr = ""
	c.drop()
}

// drop closes the connection; the history learns first that the server
// may release what was granted on it from now on.
func (c *nemesisClient) drop() {
	if c.c == nil {
		return
	}
	c.h.Closing(c.conn)
	c.c.Close()
	c.c = nil
}

// member returns addr if it is a member's client address (a redirect is
// followed only within the cluster), else "".
func (c *nemesisClient) member(addr string) string {
	for _, m := range c.ms {
		if m.client == addr {
			return addr
		}
	}
	return ""
}
