package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newLock(t *testing.T, path string, o Options) *Lock {
	t.Helper()
	l, err := New(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func readInfo(t *testing.T, path string) Info {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	info, err := Parse(b)
	if err != nil {
		t.Fatalf("lock file %q: %v", b, err)
	}
	return info
}

func TestAcquireWritesProtocolFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	now := time.Unix(1703520000, 0)
	l := newLock(t, path, Options{PID: 4242, Tag: "deploy-v1.2.3", Now: func() time.Time { return now }})
	if _, err := l.TryAcquire(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "pid=4242\ntimestamp=1703520000\ntag=deploy-v1.2.3\n"; string(b) != want {
		t.Errorf("lock file = %q, want %q", b, want)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm&^0o644 != 0 {
		t.Errorf("mode %v is wider than 0644", perm)
	}
}

func TestHeldThenReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a := newLock(t, path, Options{PID: 100, Tag: "a"})
	b := newLock(t, path, Options{PID: 200})
	if _, err := a.TryAcquire(); err != nil {
		t.Fatal(err)
	}
	h, err := b.TryAcquire()
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("second TryAcquire = %v, want ErrHeld", err)
	}
	if h.PID != 100 || h.Tag != "a" || h.Stale {
		t.Errorf("holder = %+v, want fresh pid 100 tag a", h)
	}
	if h, err := b.Release(false); !errors.Is(err, ErrNotOwner) || h.PID != 100 {
		t.Fatalf("Release by non-owner = %+v, %v; want ErrNotOwner with holder 100", h, err)
	}
	if readInfo(t, path).PID != 100 {
		t.Fatal("non-owner release changed the file")
	}
	if _, err := a.Release(false); err != nil {
		t.Fatalf("owner Release: %v", err)
	}
	if _, err := a.Release(false); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	if _, err := b.TryAcquire(); err != nil {
		t.Fatalf("TryAcquire after release: %v", err)
	}
	if _, err := a.Release(true); err != nil {
		t.Fatalf("forced Release: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock file still there after forced release: %v", err)
	}
}

// TestForeignFiles covers files written by other implementations: CRLF
// line ends and unknown fields must be honoured while fresh and removed
// once stale.
func TestForeignFiles(t *testing.T) {
	now := time.Now().Unix()
	tests := []struct {
		name      string
		content   string
		wantStale bool
	}{
		{"CRLF fresh", fmt.Sprintf("pid=7\r\ntimestamp=%d\r\ntag=win\r\n", now), false},
		{"CRLF stale", fmt.Sprintf("pid=7\r\ntimestamp=%d\r\ntag=win\r\n", now-3601), true},
		{"unknown fields fresh", fmt.Sprintf("host=b7\npid=7\nlease=9\ntimestamp=%d\n", now), false},
		{"unknown fields stale", fmt.Sprintf("host=b7\npid=7\nlease=9\ntimestamp=%d\n", now-7200), true},
		{"future timestamp", fmt.Sprintf("pid=7\ntimestamp=%d\n", now+7200), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			l := newLock(t, path, Options{PID: 99})
			h, err := l.TryAcquire()
			if tt.wantStale {
				if err != nil {
					t.Fatalf("TryAcquire over stale file: %v", err)
				}
				if got := readInfo(t, path).PID; got != 99 {
					t.Fatalf("lock file pid = %d after stealing, want 99", got)
				}
				return
			}
			if !errors.Is(err, ErrHeld) || h.PID != 7 {
				t.Fatalf("TryAcquire over fresh file = %+v, %v; want ErrHeld by pid 7", h, err)
			}
			if string(mustRead(t, path)) != tt.content {
				t.Fatal("fresh foreign lock file was modified")
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStaleBoundary checks the strict "age > stale timeout" rule.
func TestStaleBoundary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, []byte("pid=1\ntimestamp=1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := func(sec int64) *Lock {
		return newLock(t, path, Options{PID: 2, Stale: 10 * time.Second, Now: func() time.Time { return time.Unix(sec, 0) }})
	}
	if h, err := at(1010).Stat(); err != nil || h.Stale || h.Age != 10*time.Second {
		t.Fatalf("at age == timeout: %+v, %v; want not stale", h, err)
	}
	if h, err := at(1011).Stat(); err != nil || !h.Stale {
		t.Fatalf("at age > timeout: %+v, %v; want stale", h, err)
	}
}

// TestMalformedAgedByModTime: a file without a usable timestamp (a peer
// between create and write, or garbage) is held until its mtime is stale.
func TestMalformedAgedByModTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := newLock(t, path, Options{PID: 5})
	h, err := l.TryAcquire()
	if !errors.Is(err, ErrHeld) || !errors.Is(h.Malformed, ErrMalformed) {
		t.Fatalf("TryAcquire over fresh empty file = %+v, %v; want ErrHeld, malformed", h, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TryAcquire(); err != nil {
		t.Fatalf("TryAcquire over old empty file: %v", err)
	}
	if readInfo(t, path).PID != 5 {
		t.Fatal("lock file not rewritten by the new holder")
	}
}

func TestCleanup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l := newLock(t, path, Options{PID: 1})
	if _, err := l.Cleanup(); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Cleanup without file = %v, want ErrNotHeld", err)
	}
	if _, err := l.TryAcquire(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Cleanup(); !errors.Is(err, ErrHeld) {
		t.Fatalf("Cleanup of fresh lock = %v, want ErrHeld", err)
	}
	later := newLock(t, path, Options{PID: 2, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	h, err := later.Cleanup()
	if err != nil || h.PID != 1 || !h.Stale {
		t.Fatalf("Cleanup of stale lock = %+v, %v; want removed holder 1", h, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("stale lock file not removed")
	}
}

func TestAcquireTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if _, err := newLock(t, path, Options{PID: 1}).TryAcquire(); err != nil {
		t.Fatal(err)
	}
	l := newLock(t, path, Options{PID: 2, Retry: 10 * time.Millisecond})
	start := time.Now()
	h, err := l.Acquire(context.Background(), 200*time.Millisecond)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrHeld) || h.PID != 1 {
		t.Fatalf("Acquire = %+v, %v; want ErrTimeout+ErrHeld by pid 1", h, err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("gave up after %v, before the 200ms timeout", d)
	}
	if _, err := l.Acquire(context.Background(), 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Acquire with timeout 0 = %v, want ErrTimeout", err)
	}
}

func TestAcquireWaitsForRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	first := newLock(t, path, Options{PID: 1})
	if _, err := first.TryAcquire(); err != nil {
		t.Fatal(err)
	}
	second := newLock(t, path, Options{PID: 2, Retry: 5 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := second.Acquire(context.Background(), -1)
		done <- err
	}()
	if _, err := first.Release(false); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiting Acquire: %v", err)
	}
	if readInfo(t, path).PID != 2 {
		t.Fatal("waiter does not hold the lock")
	}
}

func TestAcquireCancelled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if _, err := newLock(t, path, Options{PID: 1}).TryAcquire(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newLock(t, path, Options{PID: 2}).Acquire(ctx, -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with cancelled context = %v, want context.Canceled", err)
	}
}

// TestConcurrentAcquirers runs goroutines that loop acquire → critical
// section → release and asserts nobody is ever inside together.
func TestConcurrentAcquirers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	const workers, rounds = 8, 25
	var inside, entered atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			l := newLock(t, path, Options{PID: 1000 + w, Retry: time.Millisecond})
			for range rounds {
				if _, err := l.Acquire(context.Background(), 30*time.Second); err != nil {
					t.Error(err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				entered.Add(1)
				inside.Add(-1)
				if _, err := l.Release(false); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := entered.Load(); got != workers*rounds {
		t.Fatalf("%d critical sections, want %d", got, workers*rounds)
	}
}

// TestConcurrentStaleRemoval starts many acquirers at once against the same
// stale file. All of them judge it stale; exactly one may end up holding the
// lock, and the file must name that one.
func TestConcurrentStaleRemoval(t *testing.T) {
	dir := t.TempDir()
	const contenders, rounds = 8, 100
	stale := []byte(fmt.Sprintf("pid=1\ntimestamp=%d\ntag=crashed\n", time.Now().Add(-2*time.Hour).Unix()))
	for r := range rounds {
		path := filepath.Join(dir, "r"+strconv.Itoa(r)+".lock")
		if err := os.WriteFile(path, stale, 0o644); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		var winners sync.Map
		var wg sync.WaitGroup
		for c := range contenders {
			pid := 100 + c
			l := newLock(t, path, Options{PID: pid})
			wg.Go(func() {
				<-start
				_, err := l.TryAcquire()
				switch {
				case err == nil:
					winners.Store(pid, true)
				case !errors.Is(err, ErrHeld):
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		var got []int
		winners.Range(func(k, _ any) bool { got = append(got, k.(int)); return true })
		if len(got) != 1 {
			t.Fatalf("round %d: winners %v, want exactly one", r, got)
		}
		if pid := readInfo(t, path).PID; pid != got[0] {
			t.Fatalf("round %d: file names pid %d, winner was %d", r, pid, got[0])
		}
	}
}
