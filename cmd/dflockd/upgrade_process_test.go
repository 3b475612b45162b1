package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/version"
	"github.com/dflockd-ng/dflockd/vocab"
)

// TestRollingUpgrade upgrades a 3-member cluster of the pinned earlier
// release (upgrade_build_test.go) to this tree, one member at a time, as
// docs/upgrades.md says to: each follower, then the leader; each member
// stopped with SIGTERM and started on its own --raft-dir with the new
// binary, and caught up before the next. Meanwhile a client holds a lock
// (a stable-ref, --orphan-ttl) and soak clients increment counters.
// Asserted: no acknowledged increment lost (each client's values only
// grow, and its counter ends at its last acknowledged value); the lock
// held throughout with the same token, so the same fence (another
// client's try-lock times out, the holder's renewals succeed); at most
// one leader change per restarted member (a new leader means a new
// term, so a term that grew by at most one bounds it); the members'
// replicas equal at one index (old and new binaries side by side, and
// at the end); and every member running the new release at the end.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the pinned release and runs a 3-member cluster through an upgrade")
	}
	began := time.Now()
	old := pinnedBinary(t)
	cur := binary(t)
	built := time.Since(began)

	const (
		lockKey = "upgrade-held"
		ref     = "upgrade-holder"
		lease   = 600 // s: outlasts the test; the lock must not end by itself
		soakers = 4
	)
	ms := newMembers(t, 3, "--orphan-ttl", "300")
	for _, m := range ms {
		m.bin = old
		m.start()
	}
	for _, m := range ms {
		mustRun(t, m, pinnedNumber)
	}
	lead, _ := leader(t, ms, nil, 30*time.Second)

	// The holder: a stable-ref, so that when its member goes the claim
	// waits (--orphan-ttl) for its next connection to take it over.
	h := &upgradeHolder{t: t, ms: ms, key: lockKey, ref: ref, lease: lease}
	h.connect(lead)
	grant := h.c.do("l", lockKey, fmt.Sprintf("0 %d", lease), 20*time.Second)
	fence := grantFence(t, grant)
	h.token = strings.Fields(grant)[1]

	gate := new(sync.RWMutex)
	stop, abort := make(chan struct{}), make(chan struct{})
	var done sync.WaitGroup
	var soak []*soakClient
	for i := range soakers {
		c := &soakClient{key: fmt.Sprint("upgrade-soak-", i), members: clientAddrs(ms), gate: gate}
		soak = append(soak, c)
		done.Add(1)
		go c.run(stop, abort, &done)
	}
	stopSoak := sync.OnceFunc(func() { close(stop); done.Wait() })
	// On a failure, the members restarted since are killed before this
	// runs (cleanups run last-in first-out): no client waits for an
	// acknowledgement then.
	t.Cleanup(func() { close(abort); done.Wait() })
	acked := func() (n int64) {
		for _, c := range soak {
			n += c.acked.Load()
		}
		return n
	}
	// The soak is running when every client has had writes acknowledged.
	awaitSoak := func(what string, from []int64) {
		t.Helper()
		awaitWithin(t, 60*time.Second, what, func() bool {
			for i, c := range soak {
				if c.acked.Load() < from[i]+20 {
					return false
				}
			}
			return true
		})
	}
	ackedEach := func() []int64 {
		var a []int64
		for _, c := range soak {
			a = append(a, c.acked.Load())
		}
		return a
	}
	awaitSoak("the soak's first writes acknowledged on the release "+pinnedNumber+" cluster", make([]int64, soakers))
	replicasAgree(t, ms, gate, "release "+pinnedNumber+" throughout")

	type stepFigures struct {
		id, role      string
		took          time.Duration
		termsBefore   uint64
		leaderChanges uint64
	}
	var steps []stepFigures
	upgraded := map[*member]bool{}
	for range ms {
		// Followers first, the leader last: the next member still on the
		// old release that does not lead, or the leader when it is the
		// last one left.
		lead := currentLeader(t, ms)
		var m *member
		for _, c := range ms {
			if !upgraded[c] && (m == nil || m == lead) {
				m = c
			}
		}
		role := "follower"
		if m == lead {
			role = "leader"
		}
		before := ackedEach()
		termBefore := maxTerm(t, ms)
		start := time.Now()

		m.signal(syscall.SIGTERM)
		if err := exitWithin(t, m.cmd, 30*time.Second, "SIGTERM"); err != nil {
			t.Fatalf("%s (release %s, %s) exited with %v after SIGTERM", m.id, pinnedNumber, role, err)
		}
		m.bin = cur
		m.start()
		mustRun(t, m, version.String())
		caughtUp(t, ms, m)
		took := time.Since(start)

		// The holder: on its connection while its member stays; when its
		// member went, on a new one presenting its ref, its acquire
		// answering the same token; a renewal either way.
		h.keep()
		if got := askLeader(t, ms, nil, "l", lockKey, "0", 5*time.Second); got != "timeout" {
			t.Fatalf("after upgrading %s: another client's try-lock of %s: %q, want timeout (the holder's)", m.id, lockKey, got)
		}
		awaitSoak("the soak's writes acknowledged after upgrading "+m.id, before)
		changes := maxTerm(t, ms) - termBefore
		steps = append(steps, stepFigures{m.id, role, took, termBefore, changes})
		if changes > 1 {
			t.Errorf("upgrading %s (%s): the term went from %d to %d: more than one leader change for one restarted member",
				m.id, role, termBefore, termBefore+changes)
		}
		upgraded[m] = true
		if len(upgraded) < len(ms) {
			replicasAgree(t, ms, gate, fmt.Sprintf("%d of %d members upgraded", len(upgraded), len(ms)))
		}
	}

	stopSoak()
	var ambiguous int64
	for _, c := range soak {
		if why := c.err.Load(); why != nil {
			t.Fatal(why)
		}
		ambiguous += c.ambiguous.Load()
		final, err := strconv.ParseInt(strings.TrimPrefix(askLeader(t, ms, nil, "get", c.key, "_", 5*time.Second), "ok "), 10, 64)
		if err != nil {
			t.Fatalf("get %s: %v", c.key, err)
		}
		// Each acknowledged value was above the one before (step); the
		// last is the counter, unless a write was lost or an unanswered
		// one applied after it (impossible: the client waits for the
		// answer before the next).
		if last, a := c.last.Load(), c.acked.Load(); final != last || final < a || final > a+c.ambiguous.Load() {
			t.Errorf("%s: final %d, last acknowledged %d, acknowledged %d, unanswered %d",
				c.key, final, last, a, c.ambiguous.Load())
		}
	}
	// Held with its token from before the upgrade (keep checks it), so
	// with its fence; released, the next grant's fence is above it.
	h.keep()
	if got := h.c.do("r", lockKey, h.token, 20*time.Second); got != "ok" {
		t.Fatalf("the holder's release at the end: %q", got)
	}
	if next := grantFence(t, askLeader(t, ms, nil, "l", lockKey, "0 5", 5*time.Second)); next <= fence {
		t.Fatalf("the grant after the release has fence %d, not above the held lock's %d", next, fence)
	}
	digest := replicasAgree(t, ms, gate, "release "+version.String()+" throughout")
	for _, m := range ms {
		mustRun(t, m, version.String())
	}

	var leaderChanges uint64
	for _, s := range steps {
		t.Logf("upgrade: %s (%s) stopped, restarted on %s and caught up in %v; term %d, leader changes at most %d",
			s.id, s.role, version.String(), s.took.Round(time.Millisecond), s.termsBefore, s.leaderChanges)
		leaderChanges += s.leaderChanges
	}
	t.Logf("upgrade: %s → %s: binaries built in %v; %d increments acknowledged (%d unanswered, retried), counters as acknowledged; "+
		"lock %s held throughout, fence %d, holder reconnected %d times; at most %d leader changes for %d restarts; %s; %v in all",
		pinnedNumber, version.String(), built.Round(time.Millisecond), acked(), ambiguous, lockKey, fence, h.reconnects,
		leaderChanges, len(ms), digest, time.Since(began).Round(time.Millisecond))
}

// upgradeHolder is the lock's holder: one connection at a time, each
// presenting the same stable-ref.
type upgradeHolder struct {
	t          *testing.T
	ms         []*member
	key, ref   string
	token      string
	lease      int
	c          *conn
	at         *member
	reconnects int
}

func (h *upgradeHolder) connect(m *member) {
	h.t.Helper()
	h.c, h.at = dialMember(h.t, m), m
	if got := h.c.do("stable-ref", h.ref, "_", 5*time.Second); got != "ok" {
		h.t.Fatalf("stable-ref on %s: %q", m.id, got)
	}
}

// keep renews the lock by its token on the holder's connection; when
// that member no longer runs the process it was dialled to, or does not
// lead, it connects to the leader and takes its claim over by acquiring
// again, which must answer the same token.
func (h *upgradeHolder) keep() {
	h.t.Helper()
	want := fmt.Sprint("ok ", h.lease)
	if reply, ok := h.try("n", h.token+" "+strconv.Itoa(h.lease)); ok && reply == want {
		return
	} else if ok && !strings.HasPrefix(reply, "error_not_leader") {
		h.t.Fatalf("renewal of %s on %s: %q, want %q", h.key, h.at.id, reply, want)
	}
	awaitWithin(h.t, 60*time.Second, "the holder's claim taken over on the leader", func() bool {
		h.reconnects++
		h.connect(currentLeader(h.t, h.ms))
		reply, ok := h.try("l", fmt.Sprintf("0 %d", h.lease))
		if !ok || strings.HasPrefix(reply, "error_not_leader") {
			return false
		}
		f := strings.Fields(reply)
		if len(f) != 3 || f[0] != "ok" || f[1] != h.token {
			h.t.Fatalf("the holder's acquire with its stable-ref on %s: %q, want the token %s", h.at.id, reply, h.token)
		}
		reply, ok = h.try("n", h.token+" "+strconv.Itoa(h.lease))
		if ok && reply != want && !strings.HasPrefix(reply, "error_not_leader") {
			h.t.Fatalf("renewal of %s on %s after the takeover: %q, want %q", h.key, h.at.id, reply, want)
		}
		return ok && reply == want
	})
}

// try is conn.do that reports a broken connection instead of failing.
func (h *upgradeHolder) try(cmd, arg string) (string, bool) {
	_ = h.c.c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := fmt.Fprintf(h.c.c, "%s\n%s\n%s\n", cmd, h.key, arg); err != nil {
		return "", false
	}
	line, err := h.c.r.ReadString('\n')
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(line, "\n"), true
}

// awaitWithin polls cond until it holds, failing after d.
func awaitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// memberCluster is m's stats' cluster object (false: no answer).
func memberCluster(m *member) (vocab.ClusterStats, bool) {
	var doc struct {
		Cluster *vocab.ClusterStats `json:"cluster"`
	}
	body, ok := strings.CutPrefix(ask(m.client, "stats", "_", "_", 2*time.Second), "ok ")
	if !ok || json.Unmarshal([]byte(body), &doc) != nil || doc.Cluster == nil {
		return vocab.ClusterStats{}, false
	}
	return *doc.Cluster, true
}

// currentLeader is the member that says it leads, once one does and the
// others that answer agree.
func currentLeader(t *testing.T, ms []*member) *member {
	t.Helper()
	var lead *member
	awaitWithin(t, 60*time.Second, "a leader the members agree on", func() bool {
		lead = nil
		var id string
		for _, m := range ms {
			st, ok := memberCluster(m)
			if !ok {
				continue
			}
			if st.LeaderID == "" || (id != "" && st.LeaderID != id) {
				return false
			}
			id = st.LeaderID
			if st.Role == "leader" && st.NodeID == m.id {
				lead = m
			}
		}
		return lead != nil && lead.id == id
	})
	return lead
}

// maxTerm is the highest term the members report: every leader elected
// since an earlier reading has a higher term than it.
func maxTerm(t *testing.T, ms []*member) uint64 {
	t.Helper()
	var term uint64
	awaitWithin(t, 30*time.Second, "the members' terms", func() bool {
		for _, m := range ms {
			st, ok := memberCluster(m)
			if !ok {
				return false
			}
			term = max(term, st.Term)
		}
		return true
	})
	return term
}

// caughtUp waits until m, restarted, follows a leader and has applied
// every entry the leader had committed once m was back.
func caughtUp(t *testing.T, ms []*member, m *member) {
	t.Helper()
	lead := currentLeader(t, ms)
	st, _ := memberCluster(lead)
	target := st.CommitIndex
	awaitWithin(t, 60*time.Second, fmt.Sprintf("%s applied index %d (the leader %s's commit index)", m.id, target, lead.id), func() bool {
		got, ok := memberCluster(m)
		return ok && got.LeaderID != "" && got.AppliedIndex >= target
	})
}

// mustRun checks that m's log says it runs release number (the startup
// line's version attribute; written just after the port opens).
func mustRun(t *testing.T, m *member, number string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(m.log.String(), "version="+number+" "); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not say it runs release %s:\n%s", m.id, number, tail(m.log.String()))
		}
	}
}

// replicasAgree holds the soak (gate) until the members' replicas are
// compared at one applied index (replicasConverge).
func replicasAgree(t *testing.T, ms []*member, gate *sync.RWMutex, when string) string {
	t.Helper()
	gate.Lock()
	defer gate.Unlock()
	got := replicasConverge(t, ms)
	if t.Failed() {
		t.Fatalf("%s: %s", when, got)
	}
	return got
}
