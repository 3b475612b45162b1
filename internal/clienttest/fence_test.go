package clienttest

import (
	"context"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// TestLockFenceOnV2: on the default v2 profile, whose grants carry no
// fence field, Lock.Fence is the token's fence, not 0 (a 0 would turn
// fencing off downstream), and it rises with the next grant; a
// semaphore's too; nothing held, 0 (issue #23).
func TestLockFenceOnV2(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	lock := func() *client.Lock {
		return &client.Lock{Key: "fenced", Servers: []string{srv.Addr()}, AcquireTimeout: 5 * time.Second}
	}
	a := lock()
	if a.Fence() != 0 {
		t.Fatalf("Fence before any grant = %d, want 0", a.Fence())
	}
	if ok, err := a.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	want, err := client.FenceFromToken(a.Token())
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Fence(); got == 0 || got != want {
		t.Fatalf("Fence = %d, want the token's %d", got, want)
	}
	first := a.Fence()
	must(t, a.Release(context.Background()))
	b := lock()
	if ok, err := b.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("second Acquire = %v, %v", ok, err)
	}
	defer b.Close()
	if b.Fence() <= first {
		t.Fatalf("the next grant's fence %d is not above the first's %d", b.Fence(), first)
	}
	sem := &client.Semaphore{Key: "pool", Limit: 2, Servers: []string{srv.Addr()}, AcquireTimeout: 5 * time.Second}
	if ok, err := sem.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("semaphore Acquire = %v, %v", ok, err)
	}
	defer sem.Close()
	if f, _ := client.FenceFromToken(sem.Token()); sem.Fence() != f || f == 0 {
		t.Fatalf("semaphore Fence = %d, want the token's %d", sem.Fence(), f)
	}
}

// TestLockFenceOfRandomTokens: a server whose tokens are random (it does
// not know barrier, like dflockd v1.10) gives Fence 0, not a number
// read from a random token.
func TestLockFenceOfRandomTokens(t *testing.T) {
	t.Parallel()
	const token = "9f3c0a7be1d24c55a0e6b7c8d9f01234"
	fake := testserver.StartFake(t, nil, func(cmd, _, _ string) string {
		switch cmd {
		case "l":
			return "ok " + token + " 30"
		case "r":
			return "ok"
		}
		return "error"
	})
	l := &client.Lock{Key: "k", Servers: []string{fake.Addr()}, AcquireTimeout: 5 * time.Second}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Close()
	if l.Token() != token {
		t.Fatalf("Token = %q", l.Token())
	}
	if f := l.Fence(); f != 0 {
		t.Fatalf("Fence = %d from a server with random tokens, want 0", f)
	}
}
