package noisy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/internal/testserver"
	"github.com/dflockd-ng/dflockd/policy"
)

func TestMain(m *testing.M) { testserver.Main(m) }

const testRate = 400

// startPolicyServer runs the real dflockd-ng with a policy of one noisy
// identity at the given quotas.
func startPolicyServer(t *testing.T, q Quota) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "policy.txt")
	src := fmt.Sprintf("identity noisy\n  token %s\n  allow * noisy.*\n  quota locks=%d waiters=%d keys=%d conns=%d rate=%d\n",
		policy.TokenHash("noisy-token"), q.Locks, q.Waiters, q.Keys, q.Conns, testRate)
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return testserver.Start(t, "--policy-file", file).Addr()
}

// Against the real server, the tenant reaches every quota: grants and
// error_max_locks, error_max_waiters, error_max_keys once its keys are
// made, the dialer's connections closed, and all of it paced by the rate.
func TestTenantAtEveryQuota(t *testing.T) {
	q := Quota{Locks: 12, Waiters: 3, Keys: 5, Conns: 6}
	addr := startPolicyServer(t, q)
	for run := 1; run <= 2; run++ {
		start := time.Now()
		ten, err := Start(context.Background(), Config{Addr: addr, Token: "noisy-token", Quota: q, FloodDepth: 8, DialRate: 20})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		c, err := ten.Stop()
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("run %d: %v (counts %+v)", run, err, c)
		}
		t.Logf("run %d: %+v in %v", run, c, elapsed)
		if c.MaxLocks == 0 || c.MaxWaiters == 0 || c.MaxKeys == 0 || c.Granted == 0 || c.Reads == 0 {
			t.Errorf("run %d: a quota was not reached: %+v", run, c)
		}
		// Keys outlive the connections: a second run overwrites the
		// first's, and makes none.
		if c.KeysMade != uint64(q.Keys) {
			t.Errorf("run %d: %d kset answered ok, want the keys quota %d", run, c.KeysMade, q.Keys)
		}
		if c.Dials == 0 || c.ConnsClosed != c.Dials {
			t.Errorf("run %d: %d dials beyond the conns quota, %d closed", run, c.Dials, c.ConnsClosed)
		}
		// The rate quota, a burst of 50 ms worth then the rate: the
		// replies read cannot outrun it by much.
		if most := uint64(float64(testRate)*(elapsed.Seconds()+0.05)) + 32; c.Requests > most {
			t.Errorf("run %d: %d replies in %v, over the rate quota's %d", run, c.Requests, elapsed, most)
		}
	}
}

// A server that refuses what the tenant does (a policy that denies it)
// fails its setup, naming the reply.
func TestWrongRepliesFail(t *testing.T) {
	addr := fakeServer(t, func(cmd string) string {
		if cmd == "auth" {
			return "ok"
		}
		return "error_denied"
	})
	_, err := Start(context.Background(), Config{Addr: addr, Token: "x", Quota: Quota{Locks: 10, Waiters: 2, Keys: 3, Conns: 5}})
	if err == nil || !strings.Contains(err.Error(), "error_denied") || !strings.Contains(err.Error(), "holder") {
		t.Fatalf("Start: %v, want the holder's error_denied", err)
	}
	// A grant where the quota should refuse: the waiter flood's enqueue
	// answered queued.
	addr = fakeServer(t, func(cmd string) string {
		switch cmd {
		case "auth":
			return "ok"
		case "kset":
			return "error_max_keys"
		case "l":
			return "ok 0123456789abcdef0123456789abcdef 600"
		case "get":
			return "ok 0"
		case "r":
			return "ok"
		}
		return "queued"
	})
	ten, err := Start(context.Background(), Config{Addr: addr, Token: "x", Quota: Quota{Locks: 10, Waiters: 2, Keys: 3, Conns: 5}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ten.mu.Lock()
		failed := ten.err != nil
		ten.mu.Unlock()
		if failed || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := ten.Stop(); err == nil || !strings.Contains(err.Error(), "waiters flood") {
		t.Fatalf("Stop: %v, want the waiter flood's failure", err)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := Quota{Locks: 10, Waiters: 2, Keys: 3, Conns: 5}
	for _, c := range []Config{
		{Addr: "", Token: "x", Quota: ok},
		{Addr: "127.0.0.1:1", Token: "", Quota: ok},
		{Addr: "127.0.0.1:1", Token: "a\nb", Quota: ok},
		{Addr: "127.0.0.1:1", Token: "x", Quota: Quota{Locks: 10, Waiters: 2, Keys: 3, Conns: 4}},
		{Addr: "127.0.0.1:1", Token: "x", Quota: Quota{Locks: 5, Waiters: 2, Keys: 3, Conns: 5}},
		{Addr: "127.0.0.1:1", Token: "x", Quota: Quota{Locks: 10, Waiters: 0, Keys: 3, Conns: 5}},
		{Addr: "127.0.0.1:1", Token: "x", Quota: Quota{Locks: 10, Waiters: 2, Keys: 0, Conns: 5}},
		{Addr: "127.0.0.1:1", Token: "x", Quota: ok, FloodDepth: maxDepth + 1},
		{Addr: "127.0.0.1:1", Token: "x", Quota: ok, DialRate: -1},
	} {
		if _, err := Start(context.Background(), c); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", c, err)
		}
	}
}

// fakeServer answers every request reply(cmd).
func fakeServer(t *testing.T, reply func(cmd string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					var cmd string
					for i := 0; i < 3; i++ {
						l, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if i == 0 {
							cmd = strings.TrimSuffix(l, "\n")
						}
					}
					if _, err := c.Write([]byte(reply(cmd) + "\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// With DialAddr a Sink's, the connections beyond the conns quota go to
// the sink, which closes each at its auth as the server does: every dial
// is one the sink took, and the floods still run against the server.
func TestDialsToSink(t *testing.T) {
	q := Quota{Locks: 12, Waiters: 3, Keys: 5, Conns: 6}
	addr := startPolicyServer(t, q)
	sk, err := StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Stop()
	ten, err := Start(context.Background(), Config{Addr: addr, Token: "noisy-token", Quota: q, FloodDepth: 8, DialRate: 50, DialAddr: sk.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for ten.c.dials.Load() < 5 || ten.c.maxKeys.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after 20 s: %d dials, %d error_max_keys", ten.c.dials.Load(), ten.c.maxKeys.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, err := ten.Stop()
	if err != nil {
		t.Fatalf("%v (counts %+v)", err, c)
	}
	if c.Dials == 0 || c.ConnsClosed != c.Dials {
		t.Errorf("%d dials, %d closed", c.Dials, c.ConnsClosed)
	}
	if got := sk.Accepted(); got < c.Dials {
		t.Errorf("the sink took %d connections, the dialer counted %d", got, c.Dials)
	}
}
