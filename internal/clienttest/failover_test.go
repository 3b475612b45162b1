package clienttest

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testport"
)

// Failover against fakeCluster: the leader dies, the followers name it a
// while longer, then know no leader, then a new one is elected.

// awaitPending polls cond like eventually, failing at once if the request
// reporting on done ends first: it was meant to be still waiting.
func awaitPending(t *testing.T, what string, done <-chan error, cond func() bool) {
	t.Helper()
	eventually(t, what, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the request ended (%v) while %s was awaited", err, what)
		default:
		}
		return cond()
	})
}

// awaitHeld polls cond like eventually, failing at once if l's hold is
// reported lost meanwhile.
func awaitHeld(t *testing.T, l *client.Lock, what string, cond func() bool) {
	t.Helper()
	eventually(t, what, func() bool {
		select {
		case <-l.Lost():
			t.Fatalf("lock reported lost (%v) while %s was awaited", l.Err(), what)
		default:
		}
		return cond()
	})
}

// notLost fails the test if l's hold was reported lost.
func notLost(t *testing.T, l *client.Lock, renewErrs <-chan error) {
	t.Helper()
	select {
	case <-l.Lost():
		t.Fatalf("lock reported lost: %v", l.Err())
	default:
	}
	select {
	case err := <-renewErrs:
		t.Fatalf("OnRenewError called: %v", err)
	default:
	}
	if err := l.Err(); err != nil {
		t.Fatalf("Err = %v", err)
	}
}

// TestClusterWaitsForNextLeader: a follower names the leader that just
// died; its address refuses connections. The request neither fails on
// the refused connection nor gives up while members know no leader: it
// goes round the members until one leads, within LeaderWait.
func TestClusterWaitsForNextLeader(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	addrs := fc.addrs()
	c, err := client.Cluster(addrs...).Dial(ctxTimeout(t, 10*time.Second), addrs[1]) // on a follower
	must(t, err)
	defer c.Close()
	fc.members[0].ln.kill()
	fc.set(-1, 0) // the followers still name the dead leader

	done := make(chan error, 1)
	go func() {
		_, err := client.Incr(c.WithContext(ctxTimeout(t, 30*time.Second)), "n", 1)
		done <- err
	}()
	// Two rounds of the members: refused by member 1 twice, so the dead
	// leader's refused connection was met twice without ending the request.
	awaitPending(t, "retries naming the dead leader", done, func() bool { return len(fc.requests(1, "incr")) >= 2 })
	fc.set(-1, -1) // the election: nobody knows a leader
	base := len(fc.requests(1, "incr")) + len(fc.requests(2, "incr"))
	awaitPending(t, "retries while no leader is known", done, func() bool {
		return len(fc.requests(1, "incr"))+len(fc.requests(2, "incr")) >= base+2
	})
	fc.set(2, 2)
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the request did not reach the new leader")
	}
	if c.Addr() != addrs[2] {
		t.Fatalf("connection on %s, want the new leader %s", c.Addr(), addrs[2])
	}
	if got := fc.requests(2, "incr"); len(got) == 0 || got[len(got)-1] != "incr n 1" {
		t.Fatalf("new leader received %q", got)
	}
}

// TestClusterLeaderWaitEnds: when no leader turns up within LeaderWait,
// the request fails with a *NotLeaderError that names the leader last
// named and wraps the connection error that kept it out of reach.
func TestClusterLeaderWaitEnds(t *testing.T) {
	t.Parallel()
	dead := testport.Addr(t) // nothing listens there
	f := follower(t, dead)
	d := client.Dialer{Members: []string{f.Addr(), dead}, LeaderWait: 300 * time.Millisecond}
	c, err := d.Dial(ctxTimeout(t, 10*time.Second), "")
	must(t, err)
	defer c.Close()
	_, err = client.Incr(c.WithContext(ctxTimeout(t, 30*time.Second)), "n", 1)
	var nl *client.NotLeaderError
	var op *net.OpError
	if !errors.As(err, &nl) || nl.Leader != dead || !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("Incr = %v, want a *NotLeaderError naming %s", err, dead)
	}
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("Incr = %v, want it to wrap the refused dial", err)
	}
	if n := len(f.Requests()); n < 2 {
		t.Fatalf("follower asked %d times, want the members tried again while waiting", n)
	}
	// Dial waits the same way for a cluster none of whose members answers.
	d.Members = []string{dead}
	if _, err := d.Dial(ctxTimeout(t, 10*time.Second), ""); !errors.As(err, &op) || !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("Dial of an unreachable cluster = %v", err)
	}
}

// TestLockRidesFailover: the leader granting a Lock dies. The Lock
// reconnects, presents its stable ref, and renews by token on the new
// leader once one is elected; it is not reported lost meanwhile, keeps
// its token and fence, and releases on the new leader.
func TestLockRidesFailover(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	d := client.Cluster(fc.addrs()...)
	d.StableRef = "worker-7"
	renewErrs := make(chan error, 1)
	// A renewal every 0.5 s of a 5 s lease: the lease outlasts the steps
	// below by seconds, however slow the machine.
	l := &client.Lock{Key: "job", LeaseTTL: 5, RenewRatio: 0.1, Dialer: d,
		OnRenewError: func(err error) { renewErrs <- err }}
	ctx := ctxTimeout(t, 30*time.Second)
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	tok, fence := l.Token(), l.Fence()
	if fence == 0 {
		t.Fatal("no fence")
	}
	eventually(t, "a renewal on the first leader", func() bool { return len(fc.requests(0, "n")) > 0 })

	fc.set(-1, 0)
	fc.members[0].ln.kill()
	// The followers refuse the ref, naming the dead leader.
	awaitHeld(t, l, "the lock looking for a leader", func() bool { return len(fc.requests(1, "stable-ref")) >= 2 })
	notLost(t, l, renewErrs)
	fc.set(2, 2)
	awaitHeld(t, l, "renewals on the new leader", func() bool { return len(fc.requests(2, "n")) >= 2 })
	notLost(t, l, renewErrs)
	for _, r := range fc.requests(2, "n") {
		if r != "n job "+tok+" 5" {
			t.Fatalf("renewal %q, want by the held token %s", r, tok)
		}
	}
	reqs := fc.members[2].fake.Requests()
	if i := slices.Index(reqs, "stable-ref worker-7 _"); i < 0 || i > slices.IndexFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "n ") }) {
		t.Fatalf("new leader received %q: want the stable ref before the first renewal", reqs)
	}
	if l.Token() != tok || l.Fence() != fence {
		t.Fatalf("token %s fence %d after the failover, want %s %d", l.Token(), l.Fence(), tok, fence)
	}
	must(t, l.Release(ctx))
	if got := fc.requests(2, "r"); len(got) != 1 || got[0] != "r job "+tok {
		t.Fatalf("release on the new leader: %q", got)
	}
	if h := fc.holder("job"); h != "" {
		t.Fatalf("still held by %s after Release", h)
	}
}

// TestLockLostWhenNewLeaderRefusesRenewal: during the failover the key
// went to someone else; the renewal by token on the new leader is refused
// and that, only that, is reported as the loss.
func TestLockLostWhenNewLeaderRefusesRenewal(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	renewErrs := make(chan error, 1)
	l := &client.Lock{Key: "job", LeaseTTL: 5, RenewRatio: 0.1, Dialer: client.Cluster(fc.addrs()...),
		OnRenewError: func(err error) { renewErrs <- err }}
	ctx := ctxTimeout(t, 30*time.Second)
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	fc.set(-1, -1)
	fc.members[0].ln.kill()
	awaitHeld(t, l, "the lock looking for a leader", func() bool { return len(fc.requests(1, "n")) >= 2 })
	notLost(t, l, renewErrs)
	fc.steal("job")
	fc.set(1, 1)
	cause := receive(t, renewErrs, "OnRenewError")
	<-l.Lost()
	if !errors.Is(l.Err(), client.ErrLost) || !errors.Is(l.Err(), client.ErrServer) || !errors.Is(cause, client.ErrServer) {
		t.Fatalf("Err = %v, cause %v: want the new leader's refusal", l.Err(), cause)
	}
	if l.Token() != "" {
		t.Fatal("Token after the loss")
	}
	must(t, l.Release(ctx)) // nothing left to release
	if got := fc.requests(1, "r"); len(got) != 0 {
		t.Fatalf("released a lock it no longer held: %q", got)
	}
}

// TestLockLostWhenNoLeaderWithinLease: no member leads until the lease
// would have run out; however long the cluster's clock may have stood
// still, the client cannot know the lock is still its own, and says so.
func TestLockLostWhenNoLeaderWithinLease(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	renewErrs := make(chan error, 1)
	l := &client.Lock{Key: "job", LeaseTTL: 1, Dialer: client.Cluster(fc.addrs()...),
		OnRenewError: func(err error) { renewErrs <- err }}
	if ok, err := l.Acquire(ctxTimeout(t, 30*time.Second)); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	fc.set(-1, -1)
	fc.members[0].ln.kill()
	cause := receive(t, renewErrs, "OnRenewError")
	<-l.Lost()
	if !errors.Is(l.Err(), client.ErrLost) || !errors.Is(cause, client.ErrLeaseExpired) {
		t.Fatalf("Err = %v: want the lease run out", l.Err())
	}
	if len(fc.requests(1, "n"))+len(fc.requests(2, "n")) == 0 {
		t.Fatal("lost without trying the other members")
	}
}

// TestStableRefRefusedLocally: a ref the server would refuse fails the
// dial before anything is sent.
func TestStableRefRefusedLocally(t *testing.T) {
	t.Parallel()
	f := follower(t, "")
	for _, ref := range []string{" lead", strings.Repeat("r", 65), "tab\there"} {
		d := client.Dialer{StableRef: ref}
		if _, err := d.Dial(ctxTimeout(t, 10*time.Second), f.Addr()); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("ref %q: Dial = %v, want ErrInvalid", ref, err)
		}
	}
	if got := f.Requests(); len(got) != 0 {
		t.Fatalf("sent %q", got)
	}
}

// Cluster is Dialer{Members: …}; no member is a programmer's mistake.
func TestClusterConstructor(t *testing.T) {
	t.Parallel()
	d := client.Cluster("a:1", "b:2")
	if !slices.Equal(d.Members, []string{"a:1", "b:2"}) {
		t.Fatalf("Members %q", d.Members)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Cluster() without members did not panic")
		}
	}()
	client.Cluster()
}
