package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
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
	go func() { done <- keepLease(ctx, f, "k", "tok", 3, time.Millisecond) }()
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
	err := keepLease(context.Background(), f, "k", "tok", 3, time.Millisecond)
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
