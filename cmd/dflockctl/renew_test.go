package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// fakeRenewer records renewals and fails from the failAt-th on (0: never).
type fakeRenewer struct {
	mu     sync.Mutex
	calls  []string
	failAt int
	called chan struct{}
}

func (f *fakeRenewer) Renew(ctx context.Context, key, token string, lease int) (int, error) {
	f.mu.Lock()
	f.calls = append(f.calls, key+" "+token)
	n := len(f.calls)
	f.mu.Unlock()
	select {
	case f.called <- struct{}{}:
	default:
	}
	if f.failAt > 0 && n >= f.failAt {
		return 0, errors.New("lease gone")
	}
	return lease, nil
}

func TestKeepLeaseStopsCleanly(t *testing.T) {
	f := &fakeRenewer{called: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keepLease(ctx, f, "k", grant{"tok", 3, time.Now()}, time.Millisecond, false) }()
	for range 3 {
		<-f.called
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("keepLease after cancel = %v, want nil", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) < 3 || f.calls[0] != "k tok" {
		t.Fatalf("renewals %q", f.calls)
	}
}

func TestKeepLeaseReportsLoss(t *testing.T) {
	f := &fakeRenewer{failAt: 2, called: make(chan struct{}, 1)}
	err := keepLease(context.Background(), f, "k", grant{"tok", 3, time.Now()}, time.Millisecond, false)
	if err == nil || err.Error() != "lease gone" {
		t.Fatalf("keepLease = %v, want the renewal error", err)
	}
	if len(f.calls) != 2 {
		t.Fatalf("%d renewals, want 2 (stop at the first failure)", len(f.calls))
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// scriptRenewer answers renewal n (from 1) with script(n), and counts.
type scriptRenewer struct {
	mu     sync.Mutex
	n      int
	script func(n int) error
	called chan int
}

func (s *scriptRenewer) Renew(ctx context.Context, key, token string, lease int) (int, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	select {
	case s.called <- n:
	default:
	}
	return lease, s.script(n)
}

// A connection that broke in a failover.
var errBroken = fmt.Errorf("%w: EOF", client.ErrClosed)

// TestKeepLeaseRidesFailover: in a cluster, renewals that cannot reach a
// leader are retried, and once one gets through renewing goes on: no loss.
func TestKeepLeaseRidesFailover(t *testing.T) {
	r := &scriptRenewer{called: make(chan int, 1), script: func(n int) error {
		if n >= 2 && n <= 4 {
			return errBroken
		}
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keepLease(ctx, r, "k", grant{"tok", 30, time.Now()}, time.Millisecond, true) }()
	for n := 0; n < 8; {
		select {
		case n = <-r.called:
		case err := <-done:
			t.Fatalf("keepLease ended after %d renewals: %v", n, err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("keepLease after cancel = %v", err)
	}
	// Without a cluster the first broken renewal is the loss.
	r = &scriptRenewer{script: func(n int) error { return errBroken }}
	if err := keepLease(context.Background(), r, "k", grant{"tok", 30, time.Now()}, time.Millisecond, false); !errors.Is(err, client.ErrClosed) || r.n != 1 {
		t.Fatalf("keepLease without a cluster = %v after %d renewals", err, r.n)
	}
}

// TestKeepLeaseLossAfterFailover: the new leader's refusal is the loss;
// so is a lease that runs out before any renewal gets through.
func TestKeepLeaseLossAfterFailover(t *testing.T) {
	refusal := fmt.Errorf("%w: n: error", client.ErrServer)
	r := &scriptRenewer{script: func(n int) error {
		switch {
		case n == 1:
			return nil
		case n < 4:
			return errBroken
		case n == 4:
			return &client.NotLeaderError{}
		}
		return refusal
	}}
	if err := keepLease(context.Background(), r, "k", grant{"tok", 30, time.Now()}, time.Millisecond, true); !errors.Is(err, refusal) || r.n != 5 {
		t.Fatalf("keepLease = %v after %d renewals, want the refusal at the fifth", err, r.n)
	}
	r = &scriptRenewer{script: func(n int) error { return errBroken }}
	err := keepLease(context.Background(), r, "k", grant{"tok", 1, time.Now()}, time.Millisecond, true)
	if err == nil || !errors.Is(err, client.ErrClosed) || !strings.Contains(err.Error(), "lease ran out") {
		t.Fatalf("keepLease of an unreachable cluster = %v", err)
	}
	if r.n < 2 {
		t.Fatalf("%d renewals: gave up without retrying", r.n)
	}
}
