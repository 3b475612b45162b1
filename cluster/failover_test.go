package cluster

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/vocab"
)

// TestFailoverKeepsHeldLock: a lock granted by a leader that dies is
// still held on the next leader until its lease ends, then goes to the
// next waiter with a greater fence; every replica ends in the same
// state, and the dead node catches up when it restarts.
func TestFailoverKeepsHeldLock(t *testing.T) {
	const lease = 2 * time.Second
	c := newTestCluster(t, 3, Init{})
	var conn uint32

	sent := time.Now() // before the lease can start
	g1, l1 := c.askLeader(t, &conn, "l", "k", "0 2")
	if g1.Status != vocab.StatusOK || g1.Kind != 1 {
		t.Fatalf("first grant: %+v", g1)
	}

	killed := time.Now()
	c.kill(l1)
	c.leader(awaitFor)
	t.Logf("failover: a new leader accepted requests %v after the kill", time.Since(killed).Round(time.Millisecond))

	// While the lease runs the new leader keeps the lock: a try-lock
	// times out. A failover slowed past the lease by a loaded machine
	// makes the try-lock the second grant instead; the bound below judges
	// it like the waiter's.
	var g2 engine.Result
	switch r, _ := c.askLeader(t, &conn, "l", "k", "0"); {
	case r.Status == vocab.StatusTimeout:
		// The waiter's 60 s only bound a lease that never ends.
		if g2, _ = c.askLeader(t, &conn, "l", "k", "60 5"); g2.Status != vocab.StatusOK {
			t.Fatalf("waiter: %v", g2.Status)
		}
	case r.Status == vocab.StatusOK && time.Since(sent) >= lease:
		g2 = r
	default:
		t.Fatalf("try-lock on the new leader %v after the first request, while the lease runs: %v, want timeout", time.Since(sent), r.Status)
	}
	if held := time.Since(sent); held < lease {
		t.Fatalf("granted again %v after the first request: before its %v lease could end", held, lease)
	}
	if g2.Token.Fence <= g1.Token.Fence {
		t.Fatalf("fence went from %d to %d", g1.Token.Fence, g2.Token.Fence)
	}
	c.converged(awaitFor)

	c.restart(l1, Init{})
	c.converged(awaitFor)
	if l1.node.Ready() {
		t.Fatal("the restarted node leads although a leader was established")
	}
}

// TestPartitionedLeaderStepsDown: a leader cut off from the others stops
// leading (its connections' pending requests are answered by Demoted, new
// ones refused), the majority elects another, and after the partition
// heals the old leader follows and converges.
func TestPartitionedLeaderStepsDown(t *testing.T) {
	c := newTestCluster(t, 3, Init{})
	l1 := c.leader(awaitFor)
	if err := l1.node.Submit(1, req(t, "l", "k", "0 30")); err != nil {
		t.Fatal(err)
	}
	l1.out.next(t, 1, 0, awaitFor)
	if err := l1.node.Submit(2, req(t, "l", "k", "30")); err != nil {
		t.Fatal(err)
	}
	for _, o := range c.members {
		if o != l1 {
			o.trans.Disconnect(l1.addr)
			l1.trans.Disconnect(o.addr)
		}
	}
	deadline := time.Now().Add(awaitFor)
	for l1.node.Ready() || demotions(l1) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the partitioned leader did not step down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := l1.node.Submit(3, req(t, "l", "x", "0")); err != ErrNotLeader {
		t.Fatalf("submit on a deposed leader: %v, want ErrNotLeader", err)
	}
	var l2 *member
	for l2 == nil || l2 == l1 {
		l2 = c.leader(awaitFor)
	}
	// The old epoch's waiter was cancelled by the promotion; its holder
	// keeps the lock.
	if err := l2.node.Submit(9, req(t, "l", "k", "0")); err != nil {
		t.Fatal(err)
	}
	if r := l2.out.next(t, 9, 0, awaitFor); r.Status != vocab.StatusTimeout {
		t.Fatalf("lock of the old leader's client after failover: %v, want timeout (still held)", r.Status)
	}
	c.connectAll()
	c.converged(awaitFor)
}

// askLeader submits a request as a new connection (*conn, incremented) of
// the leader and returns its result and that leader. A leader deposed
// before it answers (under load another election may follow a failover)
// answers nothing, and a member that no longer leads refuses: the request
// then goes to the next leader, as a client would send it again.
func (c *testCluster) askLeader(t *testing.T, conn *uint32, cmd, key, arg string) (engine.Result, *member) {
	t.Helper()
	deadline := time.Now().Add(awaitFor)
	for {
		m := c.leader(awaitFor)
		*conn++
		demoted := demotions(m)
		if err := m.node.Submit(*conn, req(t, cmd, key, arg)); err == nil {
			for demotions(m) == demoted {
				if res, ok := m.out.result(*conn, 0); ok {
					return res, m
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s %s %s: no result within %v", cmd, key, arg, awaitFor)
				}
				select {
				case <-m.out.changed:
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s %s: no leader answered within %v", cmd, key, arg, awaitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// result returns the i-th result of conn (0-based), if it came.
func (r *recorder) result(conn uint32, i int) (engine.Result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got[conn]) > i {
		return r.got[conn][i], true
	}
	return engine.Result{}, false
}

func demotions(m *member) int {
	m.out.mu.Lock()
	defer m.out.mu.Unlock()
	return m.out.demoted
}
