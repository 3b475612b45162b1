package clienttest

import (
	"errors"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/client"
	"github.com/dflockd-ng/dflockd/internal/testserver"
)

// profiles are the server's wire profiles: v2 sends grants as "ok T L",
// rf (redis-feats) adds the fence as a fourth field.
var profiles = []struct {
	name string
	args []string
}{{"v2", nil}, {"rf", []string{"--compat=rf"}}}

func TestLockFunctions(t *testing.T) {
	t.Parallel()
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, p.args...)
			a, b := dial(t, srv.Addr()), dial(t, srv.Addr())

			tok, lease, err := client.Acquire(a, "job", 0, client.WithLeaseTTL(40))
			must(t, err)
			if len(tok) != 32 || lease != 40 {
				t.Fatalf("Acquire = %q, %d; want a 32-hex token and lease 40", tok, lease)
			}
			// Token order is grant order (dflockd v2 fences).
			f1, err := client.FenceFromToken(tok)
			must(t, err)
			_, _, err = client.Acquire(b, "job", 0)
			wantErr(t, err, client.ErrTimeout, "Acquire of a held lock")
			n, err := client.Renew(a, "job", tok, client.WithLeaseTTL(50))
			if err != nil || n != 50 {
				t.Fatalf("Renew = %d, %v; want 50", n, err)
			}
			n, fence, err := client.RenewWithFence(a, "job", tok)
			if err != nil || n != 33 {
				t.Fatalf("RenewWithFence = %d, %v; want the default lease 33", n, err)
			}
			if p.name == "rf" && fence != f1 || p.name == "v2" && fence != 0 {
				t.Fatalf("RenewWithFence fence %d, token fence %d (profile %s)", fence, f1, p.name)
			}
			_, err = client.Renew(a, "job", "00000000000000000000000000000000")
			wantErr(t, err, client.ErrServer, "Renew with a wrong token")
			must(t, client.Release(a, "job", tok))
			wantErr(t, client.Release(a, "job", tok), client.ErrServer, "second Release")

			tok2, _, fence2, err := client.AcquireWithFence(b, "job", time.Second)
			must(t, err)
			f2, _ := client.FenceFromToken(tok2)
			if f2 <= f1 {
				t.Fatalf("second grant's fence %d not above the first's %d", f2, f1)
			}
			if p.name == "rf" && fence2 != f2 || p.name == "v2" && fence2 != 0 {
				t.Fatalf("AcquireWithFence fence %d, token fence %d (profile %s)", fence2, f2, p.name)
			}

			// Two-phase: a queues behind b, b releases, a's Wait gets it.
			st, _, _, err := client.Enqueue(a, "job")
			if err != nil || st != "queued" {
				t.Fatalf("Enqueue = %q, %v; want queued", st, err)
			}
			_, _, _, err = client.Enqueue(a, "job")
			wantErr(t, err, client.ErrAlreadyQueued, "second Enqueue")
			_, _, err = client.Wait(a, "job", 0)
			wantErr(t, err, client.ErrTimeout, "Wait while held")
			_, _, err = client.Wait(a, "job", 0)
			wantErr(t, err, client.ErrNotQueued, "Wait after the timeout left the queue")
			st, _, _, err = client.Enqueue(a, "job", client.WithLeaseTTL(7))
			if err != nil || st != "queued" {
				t.Fatalf("Enqueue = %q, %v; want queued", st, err)
			}
			must(t, client.Release(b, "job", tok2))
			tok3, lease3, err := client.Wait(a, "job", 5*time.Second)
			if err != nil || lease3 != 7 {
				t.Fatalf("Wait = %q, %d, %v; want lease 7", tok3, lease3, err)
			}
			must(t, client.Release(a, "job", tok3))

			st, tok4, lease4, fence4, err := client.EnqueueWithFence(a, "job")
			if err != nil || st != "acquired" || lease4 != 33 {
				t.Fatalf("EnqueueWithFence = %q, %q, %d, %v; want acquired", st, tok4, lease4, err)
			}
			tok5, _, fence5, err := client.WaitWithFence(a, "job", time.Second)
			if err != nil || tok5 != tok4 || fence5 != fence4 {
				t.Fatalf("WaitWithFence = %q, %d, %v; want the enqueue's grant %q, %d", tok5, fence5, err, tok4, fence4)
			}
			must(t, client.Release(a, "job", tok5))
		})
	}
}

func TestSemaphoreFunctions(t *testing.T) {
	t.Parallel()
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, p.args...)
			a, b, c := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
			t1, _, err := client.SemAcquire(a, "pool", 0, 2)
			must(t, err)
			t2, _, f2, err := client.SemAcquireWithFence(b, "pool", 0, 2, client.WithLeaseTTL(9))
			must(t, err)
			if t1 == t2 || (p.name == "rf") != (f2 > 0) {
				t.Fatalf("tokens %q %q, fence %d (profile %s)", t1, t2, f2, p.name)
			}
			_, _, err = client.SemAcquire(c, "pool", 0, 2)
			wantErr(t, err, client.ErrTimeout, "third SemAcquire of two slots")
			_, _, err = client.SemAcquire(c, "pool", 0, 3)
			wantErr(t, err, client.ErrLimitMismatch, "SemAcquire with another limit")
			if n, err := client.SemRenew(b, "pool", t2); err != nil || n != 33 {
				t.Fatalf("SemRenew = %d, %v", n, err)
			}
			if n, _, err := client.SemRenewWithFence(b, "pool", t2, client.WithLeaseTTL(11)); err != nil || n != 11 {
				t.Fatalf("SemRenewWithFence = %d, %v", n, err)
			}
			st, _, _, err := client.SemEnqueue(c, "pool", 2)
			if err != nil || st != "queued" {
				t.Fatalf("SemEnqueue = %q, %v", st, err)
			}
			must(t, client.SemRelease(a, "pool", t1))
			t3, _, err := client.SemWait(c, "pool", 5*time.Second)
			must(t, err)
			must(t, client.SemRelease(c, "pool", t3))
			st, t4, _, _, err := client.SemEnqueueWithFence(c, "pool", 2, client.WithLeaseTTL(5))
			if err != nil || st != "acquired" {
				t.Fatalf("SemEnqueueWithFence = %q, %v", st, err)
			}
			t5, lease, _, err := client.SemWaitWithFence(c, "pool", time.Second)
			if err != nil || t5 != t4 || lease != 5 {
				t.Fatalf("SemWaitWithFence = %q, %d, %v; want %q, 5", t5, lease, err, t4)
			}
			must(t, client.SemRelease(c, "pool", t5))
			wantErr(t, client.SemRelease(c, "pool", t5), client.ErrServer, "second SemRelease")
		})
	}
}

func TestRWLockFunctions(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	r1, r2, w := dial(t, srv.Addr()), dial(t, srv.Addr()), dial(t, srv.Addr())
	rt1, _, _, err := client.RLock(r1, "doc", 0)
	must(t, err)
	rt2, _, _, err := client.RLock(r2, "doc", 0, client.WithLeaseTTL(20))
	must(t, err)
	_, _, _, err = client.WLock(w, "doc", 0)
	wantErr(t, err, client.ErrTimeout, "WLock while read-held")
	if n, _, err := client.RRenew(r1, "doc", rt1, client.WithLeaseTTL(12)); err != nil || n != 12 {
		t.Fatalf("RRenew = %d, %v", n, err)
	}
	st, _, _, _, err := client.WEnqueue(w, "doc")
	if err != nil || st != "queued" {
		t.Fatalf("WEnqueue = %q, %v", st, err)
	}
	// No reader barging past the queued writer.
	_, _, _, err = client.RLock(r2, "doc2", 0)
	must(t, err)
	r3 := dial(t, srv.Addr())
	_, _, _, err = client.RLock(r3, "doc", 0)
	wantErr(t, err, client.ErrTimeout, "RLock behind a queued writer")
	must(t, client.RUnlock(r1, "doc", rt1))
	must(t, client.RUnlock(r2, "doc", rt2))
	wt, _, _, err := client.WWait(w, "doc", 5*time.Second)
	must(t, err)
	if n, _, err := client.WRenew(w, "doc", wt); err != nil || n != 33 {
		t.Fatalf("WRenew = %d, %v", n, err)
	}
	st, _, _, _, err = client.REnqueue(r1, "doc", client.WithLeaseTTL(8))
	if err != nil || st != "queued" {
		t.Fatalf("REnqueue = %q, %v", st, err)
	}
	must(t, client.WUnlock(w, "doc", wt))
	rt, lease, _, err := client.RWait(r1, "doc", 5*time.Second)
	if err != nil || lease != 8 {
		t.Fatalf("RWait = %d, %v", lease, err)
	}
	// A lock key is not a read-write lock.
	_, _, err = client.Acquire(w, "plain", 0)
	must(t, err)
	_, _, _, err = client.WLock(r2, "plain", 0)
	wantErr(t, err, client.ErrTypeMismatch, "WLock of a plain lock")
	must(t, client.RUnlock(r1, "doc", rt))
}

func TestInvalidArgumentsAreNotSent(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	for _, key := range []string{"", "a b", "a\tb", "a\nb"} {
		_, _, err := client.Acquire(c, key, 0)
		wantErr(t, err, client.ErrInvalid, "Acquire("+key+")")
	}
	checks := map[string]error{
		"long key": func() error { _, err := client.Incr(c, string(make([]byte, 300)), 1); return err }(),
		"kv tab":   client.KVSet(c, "k", "a\tb", 0),
		"push LF":  func() error { _, err := client.RPush(c, "l", "a\nb"); return err }(),
		"token":    client.Release(c, "k", "a b"),
		"raw CR":   func() error { _, err := c.Do("ping", "_", "x\ry"); return err }(),
		"wildcard": func() error { _, err := client.Emit(c, "a.*", "x"); return err }(),
		"auth":     client.Authenticate(c, ""),
	}
	for what, err := range checks {
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
	// Nothing reached the server: the connection is still in step.
	must(t, client.Ping(c))
}

// TestArgumentErrorTextsOfRedisFeats: the argument checks whose texts
// dflockd's redis-feats client tests compare give exactly its texts, and
// still match ErrInvalid; nothing is sent (issue #23).
func TestArgumentErrorTextsOfRedisFeats(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t)
	c := dial(t, srv.Addr())
	cas := func(old, new string) error { _, err := client.KVCAS(c, "k", old, new, 0); return err }
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"Authenticate with an empty token", client.Authenticate(c, ""), "dflockd: empty auth token"},
		{"KVSet with a tab in the value", client.KVSet(c, "k", "a\tb", 0), "dflockd: value contains tab"},
		{"KVCAS with an empty new value", cas("old", ""), "dflockd: newValue must not be empty"},
		{"KVCAS with a tab in the old value", cas("a\tb", "new"), "dflockd: oldValue contains tab"},
		{"KVCAS with a tab in both values", cas("a\tb", "c\td"), "dflockd: oldValue contains tab"},
		{"KVCAS with a tab in the new value", cas("old", "c\td"), "dflockd: newValue contains tab"},
	} {
		if tc.err == nil || tc.err.Error() != tc.want || !errors.Is(tc.err, client.ErrInvalid) {
			t.Errorf("%s: %v, want %q matching ErrInvalid", tc.what, tc.err, tc.want)
		}
	}
	must(t, client.Ping(c))
}
