package clienttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// TestLockRenewsUnderShortLease holds a 3 s lease past its end: only
// background renewal keeps others out that long. Renewing every tenth of
// the lease (300 ms) leaves 2.7 s for a stalled machine before a late
// renewal would really lose the lock.
func TestLockRenewsUnderShortLease(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	const lease = 3 * time.Second
	l := &client.Lock{Key: "short", LeaseTTL: int(lease / time.Second), RenewRatio: 0.1, Servers: []string{srv.Addr()}}
	ok, err := l.Acquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// After the grant: unrenewed, the lease would end by acquired+lease.
	acquired := time.Now()
	probe := dial(t, srv.Addr())
	for until := acquired.Add(lease + 2*time.Second); time.Now().Before(until); {
		_, _, err := client.Acquire(probe, "short", 0)
		wantErr(t, err, client.ErrTimeout, "try-lock while renewed")
		time.Sleep(100 * time.Millisecond) // pacing the probes, not synchronisation
	}
	select {
	case <-l.Lost():
		t.Fatalf("lost: %v", l.Err())
	default:
	}
	tok := l.Token()
	must(t, l.Release(context.Background()))
	if l.Token() != "" {
		t.Fatal("Token after Release")
	}
	if _, _, err := client.Acquire(probe, "short", 0); err != nil {
		t.Fatalf("lock %s not free after Release: %v", tok, err)
	}
}

// TestLockLostReportedByRenewal takes the lock away behind the holder's
// back and expects the loss reported, by the renewal that finds it gone.
// When depends on the renewal timer and on the machine's load: logged,
// not bounded.
func TestLockLostReportedByRenewal(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	const lease = 2 * time.Second
	renewErr := make(chan error, 1)
	l := &client.Lock{Key: "k", LeaseTTL: int(lease / time.Second), Servers: []string{srv.Addr()},
		OnRenewError: func(err error) { renewErr <- err }}
	ok, err := l.Acquire(context.Background())
	if !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Close()
	// Anyone with the token may release it.
	must(t, client.Release(dial(t, srv.Addr()), "k", l.Token()))
	released := time.Now()
	select {
	case <-l.Lost():
	case <-time.After(20 * time.Second): // generous: only a renewal that never runs misses it
		t.Fatalf("loss not reported 20 s after the release (lease %v)", lease)
	}
	t.Logf("loss reported %v after the release", time.Since(released).Round(time.Millisecond))
	wantErr(t, l.Err(), client.ErrLost, "Err")
	wantErr(t, receive(t, renewErr, "OnRenewError"), client.ErrServer, "OnRenewError's error")
	if l.Token() != "" {
		t.Fatal("Token still set after the loss")
	}
	must(t, l.Release(context.Background())) // nothing left to release
}

// TestLockLostWhenServerDies: a dead connection is reported at once, not
// at the next renewal.
func TestLockLostWhenServerDies(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	l := &client.Lock{Key: "k", LeaseTTL: 60, Servers: []string{srv.Addr()}}
	ok, err := l.Acquire(context.Background())
	if !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Close()
	srv.Kill()
	// Generous, yet shorter than the 30 s until the first renewal of the
	// 60 s lease, which would report the loss too.
	select {
	case <-l.Lost():
	case <-time.After(20 * time.Second):
		t.Fatal("loss not reported 20 s after the server died")
	}
	wantErr(t, l.Err(), client.ErrClosed, "Err")
}

func TestLockTimeoutCancelAndClose(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	holder := &client.Lock{Key: "k", Servers: []string{srv.Addr()}}
	if ok, err := holder.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	l := &client.Lock{Key: "k", Servers: []string{srv.Addr()}, AcquireTimeout: time.Second}
	if ok, err := l.Acquire(context.Background()); ok || err != nil {
		t.Fatalf("Acquire of a held lock = %v, %v; want false, nil", ok, err)
	}
	// Cancelling a long wait returns at once and withdraws the waiter.
	l.AcquireTimeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx); got <- err }()
	c := dial(t, srv.Addr())
	eventually(t, "the waiter to queue", func() bool { return statsField(t, c, "locks", "k", "waiters") == 1 })
	cancel()
	wantErr(t, receive(t, got, "cancelled Acquire"), context.Canceled, "cancelled Acquire")
	eventually(t, "the waiter to leave", func() bool { return statsField(t, c, "locks", "k", "waiters") == 0 })
	// Close without release: the server frees the lock with the connection.
	must(t, holder.Close())
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire after the holder's Close = %v, %v", ok, err)
	}
	must(t, l.Release(context.Background()))
}

func TestLockTwoPhase(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	l := &client.Lock{Key: "k", Servers: []string{srv.Addr()}, LeaseTTL: 1}
	_, err := l.Wait(context.Background(), time.Second)
	wantErr(t, err, client.ErrNotQueued, "Wait before Enqueue")
	if st, err := l.Enqueue(context.Background()); st != "acquired" || err != nil {
		t.Fatalf("Enqueue of a free lock = %q, %v", st, err)
	}
	other := &client.Lock{Key: "k", Servers: []string{srv.Addr()}}
	if st, err := other.Enqueue(context.Background()); st != "queued" || err != nil {
		t.Fatalf("Enqueue of a held lock = %q, %v", st, err)
	}
	// l's 1 s lease is renewed while other waits.
	if ok, err := other.Wait(context.Background(), 2*time.Second); ok || err != nil {
		t.Fatalf("Wait while renewed = %v, %v; want a timeout", ok, err)
	}
	if st, err := other.Enqueue(context.Background()); st != "queued" || err != nil {
		t.Fatalf("Enqueue = %q, %v", st, err)
	}
	must(t, l.Release(context.Background()))
	if ok, err := other.Wait(context.Background(), 5*time.Second); !ok || err != nil {
		t.Fatalf("Wait after release = %v, %v", ok, err)
	}
	if other.Token() == "" {
		t.Fatal("no token after Wait")
	}
	must(t, other.Release(context.Background()))
}

func TestSemaphoreType(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf")
	sem := func() *client.Semaphore {
		return &client.Semaphore{Key: "pool", Limit: 2, Servers: []string{srv.Addr()}, AcquireTimeout: time.Second, LeaseTTL: 1}
	}
	a, b, c := sem(), sem(), sem()
	for _, s := range []*client.Semaphore{a, b} {
		if ok, err := s.Acquire(context.Background()); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		defer s.Close()
	}
	if a.Fence() == 0 || a.Fence() == b.Fence() {
		t.Fatalf("fences %d and %d: rf grants carry distinct fences", a.Fence(), b.Fence())
	}
	if ok, err := c.Acquire(context.Background()); ok || err != nil {
		t.Fatalf("third Acquire = %v, %v; want a timeout", ok, err)
	}
	if st, err := c.Enqueue(context.Background()); st != "queued" || err != nil {
		t.Fatalf("Enqueue = %q, %v", st, err)
	}
	must(t, a.Release(context.Background()))
	if ok, err := c.Wait(context.Background(), 5*time.Second); !ok || err != nil {
		t.Fatalf("Wait = %v, %v", ok, err)
	}
	must(t, c.Release(context.Background()))
}

func TestRWLockType(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=rf")
	rw := func() *client.RWLock {
		return &client.RWLock{Key: "doc", Servers: []string{srv.Addr()}, AcquireTimeout: time.Second, LeaseTTL: 1}
	}
	r1, r2, w := rw(), rw(), rw()
	for _, r := range []*client.RWLock{r1, r2} {
		if ok, err := r.RLock(context.Background()); !ok || err != nil {
			t.Fatalf("RLock = %v, %v", ok, err)
		}
	}
	if r1.Fence() == 0 {
		t.Fatal("no fence from an rf server")
	}
	// Past the 1 s lease: renewal keeps the readers in.
	if ok, err := w.WLock(context.Background()); ok || err != nil {
		t.Fatalf("WLock while read-held = %v, %v", ok, err)
	}
	must(t, r1.Unlock(context.Background()))
	must(t, r2.Unlock(context.Background()))
	if ok, err := w.WLock(context.Background()); !ok || err != nil {
		t.Fatalf("WLock = %v, %v", ok, err)
	}
	if ok, err := r1.RLock(context.Background()); ok || err != nil {
		t.Fatalf("RLock while write-held = %v, %v", ok, err)
	}
	must(t, w.Unlock(context.Background()))
	must(t, w.Close())
}

func TestElection(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	events := make(chan string, 8)
	const lease = 3 * time.Second
	elect := func(name string) *client.Election {
		// A 3 s lease renewed every 300 ms: 2.7 s for a stalled machine
		// before a late renewal would really hand the leadership on.
		return &client.Election{Key: "primary", Servers: []string{srv.Addr()}, LeaseTTL: int(lease / time.Second), RenewRatio: 0.1,
			AcquireTimeout: 10 * time.Second,
			OnElected:      func() { events <- name + " elected" },
			OnResigned:     func() { events <- name + " resigned" }}
	}
	a, b := elect("a"), elect("b")
	if won, err := a.Campaign(context.Background()); !won || err != nil {
		t.Fatalf("Campaign = %v, %v", won, err)
	}
	if e := receive(t, events, "callback"); e != "a elected" || !a.IsLeader() {
		t.Fatalf("callback %q, IsLeader %v", e, a.IsLeader())
	}
	won := make(chan error, 1)
	go func() { _, err := b.Campaign(context.Background()); won <- err }()
	obs := client.NewLeaderConn(dial(t, srv.Addr()))
	must(t, obs.Observe("primary"))
	eventually(t, "b to queue", func() bool { return statsField(t, obs.Conn(), "locks", "primary", "waiters") == 1 })
	if b.IsLeader() {
		t.Fatal("b leads while a does")
	}
	must(t, a.Resign(context.Background()))
	must(t, receive(t, won, "b's Campaign"))
	// After b's grant: unrenewed, its lease would end by elected+lease.
	elected := time.Now()
	got := map[string]bool{receive(t, events, "callback"): true, receive(t, events, "callback"): true}
	if !got["a resigned"] || !got["b elected"] || !b.IsLeader() || a.IsLeader() {
		t.Fatalf("callbacks %v, a leads %v, b leads %v", got, a.IsLeader(), b.IsLeader())
	}
	// b's lease outlives a few renewals; then it loses it to a release
	// behind its back and is told.
	time.Sleep(time.Until(elected.Add(lease + 500*time.Millisecond))) // past the lease, were it not renewed
	if !b.IsLeader() {
		t.Fatalf("b lost the leadership: %v", b.Err())
	}
	must(t, client.Release(obs.Conn(), "primary", b.Token()))
	<-b.Lost()
	if e := receive(t, events, "callback"); e != "b resigned" || b.IsLeader() {
		t.Fatalf("after the loss: callback %q, IsLeader %v", e, b.IsLeader())
	}
	if !errors.Is(b.Err(), client.ErrLost) {
		t.Fatalf("Err = %v", b.Err())
	}
	must(t, b.Resign(context.Background()))
	must(t, b.Close())
}
