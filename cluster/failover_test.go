package cluster

import (
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
)

// TestFailoverKeepsHeldLock: a lock granted by a leader that dies is
// still held on the next leader until its lease ends, then goes to the
// next waiter with a greater fence; every replica ends in the same
// state, and the dead node catches up when it restarts.
func TestFailoverKeepsHeldLock(t *testing.T) {
	c := newTestCluster(t, 3, Init{})
	l1 := c.leader(5 * time.Second)

	sent := time.Now()
	if err := l1.node.Submit(1, req(t, "l", "k", "0 2")); err != nil {
		t.Fatal(err)
	}
	g1 := l1.out.next(t, 1, 0, 5*time.Second)
	if g1.Status != parse.StatusOK || g1.Kind != 1 {
		t.Fatalf("first grant: %+v", g1)
	}

	killed := time.Now()
	c.kill(l1)
	l2 := c.leader(5 * time.Second)
	t.Logf("failover: a new leader accepted requests %v after the kill", time.Since(killed).Round(time.Millisecond))

	if err := l2.node.Submit(7, req(t, "l", "k", "0")); err != nil {
		t.Fatal(err)
	}
	if r := l2.out.next(t, 7, 0, 5*time.Second); r.Status != parse.StatusTimeout {
		t.Fatalf("try-lock on the new leader while the lease runs: %v, want timeout", r.Status)
	}
	if err := l2.node.Submit(7, req(t, "l", "k", "10 5")); err != nil {
		t.Fatal(err)
	}
	g2 := l2.out.next(t, 7, 1, 10*time.Second)
	if g2.Status != parse.StatusOK {
		t.Fatalf("waiter: %v", g2.Status)
	}
	if held := time.Since(sent); held < 2*time.Second {
		t.Fatalf("granted again %v after the first request: before its 2 s lease could end", held)
	}
	if g2.Token.Fence <= g1.Token.Fence {
		t.Fatalf("fence went from %d to %d", g1.Token.Fence, g2.Token.Fence)
	}
	c.converged(5 * time.Second)

	c.restart(l1, Init{})
	c.converged(10 * time.Second)
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
	l1 := c.leader(5 * time.Second)
	if err := l1.node.Submit(1, req(t, "l", "k", "0 30")); err != nil {
		t.Fatal(err)
	}
	l1.out.next(t, 1, 0, 5*time.Second)
	if err := l1.node.Submit(2, req(t, "l", "k", "30")); err != nil {
		t.Fatal(err)
	}
	for _, o := range c.members {
		if o != l1 {
			o.trans.Disconnect(l1.addr)
			l1.trans.Disconnect(o.addr)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
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
		l2 = c.leader(5 * time.Second)
	}
	// The old epoch's waiter was cancelled by the promotion; its holder
	// keeps the lock.
	if err := l2.node.Submit(9, req(t, "l", "k", "0")); err != nil {
		t.Fatal(err)
	}
	if r := l2.out.next(t, 9, 0, 5*time.Second); r.Status != parse.StatusTimeout {
		t.Fatalf("lock of the old leader's client after failover: %v, want timeout (still held)", r.Status)
	}
	c.connectAll()
	c.converged(10 * time.Second)
}

func demotions(m *member) int {
	m.out.mu.Lock()
	defer m.out.mu.Unlock()
	return m.out.demoted
}
