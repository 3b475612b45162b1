package clienttest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// release frees key in the cluster's table, as its holder's release on
// the leader would.
func (fc *fakeCluster) release(key string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	delete(fc.holds, key)
}

// TestAcquireWaitRidesFailover: a Lock's Acquire waits on a held key
// when the leader dies. It does not fail: it waits for the next leader
// and sends the acquire there again, with what is left of its timeout,
// and returns the grant made there.
func TestAcquireWaitRidesFailover(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	fc.waits = true
	fc.steal("job") // held by another client
	const timeout = 60
	l := &client.Lock{Key: "job", AcquireTimeout: timeout * time.Second, LeaseTTL: 5,
		Dialer: client.Cluster(fc.addrs()...)}
	t.Cleanup(func() { l.Close() })
	done := make(chan error, 1)
	go func() {
		ok, err := l.Acquire(ctxTimeout(t, 2*timeout*time.Second))
		if err == nil && !ok {
			err = client.ErrTimeout
		}
		done <- err
	}()
	awaitPending(t, "the acquire waiting on member 0", done, func() bool { return len(fc.requests(0, "l")) == 1 })

	fc.members[0].ln.kill() // its connections cut first: a death, not a demotion
	fc.set(2, 2)
	awaitPending(t, "the acquire sent again to member 2", done, func() bool { return len(fc.requests(2, "l")) == 1 })
	again := strings.Fields(fc.requests(2, "l")[0]) // l job <timeout> <lease>
	if n, err := strconv.Atoi(again[2]); err != nil || n < 1 || n > timeout || again[3] != "5" {
		t.Fatalf("sent again as %q: want what is left of %d s, and the lease 5", fc.requests(2, "l")[0], timeout)
	}
	fc.release("job")
	select {
	case err := <-done:
		must(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Acquire did not return within 30 s of the release")
	}
	if l.Token() == "" || l.Token() != fc.holder("job") {
		t.Fatalf("token %q, the cluster's holder %q", l.Token(), fc.holder("job"))
	}
}

// TestAcquireWaitNotSentAgainOnClose: an Acquire whose wait is ended by
// the caller (its context) or by Close is not sent again: only a broken
// connection is ridden through.
func TestAcquireWaitNotSentAgainOnClose(t *testing.T) {
	t.Parallel()
	fc := startFakeCluster(t, 3)
	fc.waits = true
	fc.steal("job")
	t.Cleanup(func() { fc.set(-1, -1) }) // ends the fake's waits
	l := &client.Lock{Key: "job", AcquireTimeout: time.Minute, Dialer: client.Cluster(fc.addrs()...)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx)
		done <- err
	}()
	awaitPending(t, "the acquire waiting on member 0", done, func() bool { return len(fc.requests(0, "l")) == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire after its context was cancelled = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Acquire did not return within 30 s of its cancellation")
	}

	go func() {
		_, err := l.Acquire(context.Background())
		done <- err
	}()
	awaitPending(t, "the second acquire waiting on member 0", done, func() bool { return len(fc.requests(0, "l")) == 2 })
	l.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Acquire ended by Close returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Acquire did not return within 30 s of Close")
	}
	if n := len(fc.requests(0, "l")); n != 2 {
		t.Fatalf("member 0 received %d acquires, want 2: none sent again", n)
	}
}
