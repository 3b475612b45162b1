package clienttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
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

// TestLockFenceOnV1: dflockd-ng's tokens carry the fence under --compat=v1
// too, where the server refuses barrier as dflockd v1.10 does: Lock.Fence
// is the token's fence there as well, not 0, for locks and semaphores
// (issue #34).
func TestLockFenceOnV1(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, "--compat=v1")
	l := &client.Lock{Key: "fenced", Servers: []string{srv.Addr()}, AcquireTimeout: 5 * time.Second}
	if ok, err := l.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer l.Close()
	want, err := client.FenceFromToken(l.Token())
	must(t, err)
	if got := l.Fence(); got == 0 || got != want {
		t.Fatalf("Fence = %d under --compat=v1, want the token's %d", got, want)
	}
	sem := &client.Semaphore{Key: "pool", Limit: 2, Servers: []string{srv.Addr()}, AcquireTimeout: 5 * time.Second}
	if ok, err := sem.Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("semaphore Acquire = %v, %v", ok, err)
	}
	defer sem.Close()
	if f, _ := client.FenceFromToken(sem.Token()); sem.Fence() != f || f == 0 {
		t.Fatalf("semaphore Fence = %d under --compat=v1, want the token's %d", sem.Fence(), f)
	}
	// The probe released its grant: "fenced" is the only lock held.
	var st struct {
		Locks []struct{ Key string } `json:"locks"`
	}
	doc, err := client.Stats(dial(t, srv.Addr()))
	must(t, err)
	must(t, json.Unmarshal([]byte(doc), &st))
	if len(st.Locks) != 1 || st.Locks[0].Key != "fenced" {
		t.Fatalf("locks held after the probe: %s", doc)
	}
}

// TestLockFenceOfRandomTokensV110: dflockd v1.10.0 refuses barrier and
// grants fresh random tokens (16 bytes of crypto/rand): whatever the
// tokens look like, Fence is 0, on every connection, and the probe's
// grant is released (issue #34). Half the locks get a token that happens
// to begin like a fenced one (a clock reading in nanoseconds, as the
// fences of dflockd v2 and dflockd-ng do): one token's shape proves
// nothing.
func TestLockFenceOfRandomTokensV110(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	held := map[string]string{} // key → token
	fake := testserver.StartFake(t, nil, func(cmd, key, arg string) string {
		mu.Lock()
		defer mu.Unlock()
		switch cmd {
		case "l":
			if _, ok := held[key]; ok {
				return "timeout"
			}
			var b [16]byte
			rand.Read(b[:])
			held[key] = hex.EncodeToString(b[:])
			if n, _ := strconv.Atoi(strings.TrimPrefix(key, "k")); strings.HasPrefix(key, "k") && n%2 == 0 {
				held[key] = fmt.Sprintf("%016x", time.Now().UnixNano()) + held[key][16:]
			}
			return "ok " + held[key] + " 33"
		case "r":
			if held[key] != arg {
				return "error"
			}
			delete(held, key)
			return "ok"
		case "n":
			return "ok 33"
		}
		return "error" // barrier among them, as v1.10.0
	})
	for i := range 50 {
		l := &client.Lock{Key: "k" + strconv.Itoa(i), Servers: []string{fake.Addr()}, AcquireTimeout: 5 * time.Second}
		if ok, err := l.Acquire(context.Background()); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		if f := l.Fence(); f != 0 {
			t.Fatalf("Fence = %d from a server with random tokens (%s), want 0", f, l.Token())
		}
		must(t, l.Release(context.Background()))
		l.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(held) != 0 {
		t.Fatalf("still held on the fake server: %v", held)
	}
}
