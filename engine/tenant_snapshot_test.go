package engine

import (
	"bytes"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/vocab"
)

// A snapshot carries the tenants (a cluster's replicas count quotas in
// them, cluster.OpTenant): a restored engine has the same tenants with the
// same bounds and counts, the same sessions and keys counted against them,
// and goes on refusing and admitting exactly as the original. An engine
// without tenants writes the format releases before tenants read.
func TestSnapshotCarriesTenants(t *testing.T) {
	h := newHarness(t, Config{Shards: 4, Profile: vocab.ProfileRF})
	var plain bytes.Buffer
	if err := h.eng.Snapshot(&plain); err != nil {
		t.Fatal(err)
	}
	if got := plain.String()[:len(snapMagic)]; got != snapMagic {
		t.Fatalf("an engine without tenants wrote magic %q, want %q", got, snapMagic)
	}

	a := h.eng.TenantNamed("team-a")
	a.SetLimits(2, 1, 2)
	b := h.eng.TenantNamed("team-b") // bound by nothing, still counted
	s1, s2, s3, s4 := h.session(), h.session(), h.session(), h.session()
	h.eng.SetTenant(s1, a)
	h.eng.SetTenant(s2, a)
	h.eng.SetTenant(s3, b)
	_ = s4 // nobody's
	wantStatus(t, h.do(s1, "l", "k1", "0 30"), vocab.StatusOK)
	wantStatus(t, h.do(s3, "l", "k2", "0 30"), vocab.StatusOK)
	wantBlocked(t, h.do(s2, "l", "k2", "10 30"))
	wantStatus(t, h.do(s1, "incr", "c1", "1"), vocab.StatusOK)
	wantStatus(t, h.do(s1, "kset", "c2", "v"), vocab.StatusOK)
	wantStatus(t, h.do(s3, "rpush", "l1", "v"), vocab.StatusOK)
	wantStatus(t, h.do(s4, "incr", "c9", "1"), vocab.StatusOK)

	var snap bytes.Buffer
	if err := h.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if got := snap.String()[:len(snapMagicTail)]; got != snapMagicTail {
		t.Fatalf("an engine with tenants wrote magic %q, want %q", got, snapMagicTail)
	}
	cfg := h.eng.cfg
	cfg.Shards = 16
	r := newHarness(t, cfg)
	r.clock = h.clock
	restored, err := Restore(cfg, bytes.NewReader(snap.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	r.eng = restored
	if r.eng.Digest() != h.eng.Digest() {
		t.Fatal("the restored engine's digest differs")
	}
	var round bytes.Buffer
	if err := r.eng.Snapshot(&round); err != nil || !bytes.Equal(round.Bytes(), snap.Bytes()) {
		t.Fatalf("the restored engine snapshots differently (%v)", err)
	}
	same := func(step string) {
		t.Helper()
		for _, name := range []string{"team-a", "team-b"} {
			x, y := h.eng.LookupTenant(name), r.eng.LookupTenant(name)
			if y == nil {
				t.Fatalf("%s: the restored engine has no tenant %s", step, name)
			}
			xc, xw, xk := x.Usage()
			yc, yw, yk := y.Usage()
			xl1, xl2, xl3 := x.Limits()
			yl1, yl2, yl3 := y.Limits()
			if xc != yc || xw != yw || xk != yk || xl1 != yl1 || xl2 != yl2 || xl3 != yl3 {
				t.Fatalf("%s: tenant %s: original usage %d/%d/%d bounds %d/%d/%d, restored %d/%d/%d bounds %d/%d/%d",
					step, name, xc, xw, xk, xl1, xl2, xl3, yc, yw, yk, yl1, yl2, yl3)
			}
		}
		if r.eng.Digest() != h.eng.Digest() {
			t.Fatalf("%s: digests differ", step)
		}
	}
	same("restored")
	if c, w, k := a.Usage(); c != 2 || w != 1 || k != 2 {
		t.Fatalf("team-a counts %d claims, %d waiting, %d keys; want 2, 1, 2", c, w, k)
	}
	// Both engines go on alike: the quotas refuse, and room given back
	// is counted back, in the restored engine as in the original.
	both := func(s SessionID, cmd, key, arg string, want vocab.Status) {
		t.Helper()
		for _, x := range []*harness{h, r} {
			if got := x.do(s, cmd, key, arg); got.Status != want {
				t.Fatalf("%s %s %s: %v, want %v", cmd, key, arg, got.Status, want)
			}
		}
		same(cmd + " " + key)
	}
	both(s1, "l", "k3", "0 30", vocab.StatusErrorMaxLocks)
	both(s1, "incr", "c3", "1", vocab.StatusErrorMaxKeys)
	both(s3, "incr", "c4", "1", vocab.StatusOK) // team-b has no bound
	for _, x := range []*harness{h, r} {
		x.close(s2) // its queued claim goes
	}
	same("close")
	both(s1, "l", "k3", "0 30", vocab.StatusOK)
	both(s1, "kdel", "c2", "", vocab.StatusOK)
	both(s1, "incr", "c3", "1", vocab.StatusOK)
	if c, w, k := r.eng.LookupTenant("team-a").Usage(); c != 2 || w != 0 || k != 2 {
		t.Fatalf("restored team-a counts %d claims, %d waiting, %d keys; want 2, 0, 2", c, w, k)
	}
}

// Whose a session or a key is is part of the digest: replicas that
// disagree about it are told apart.
func TestDigestCoversTenants(t *testing.T) {
	digest := func(bind bool) [32]byte {
		h := newHarness(t, Config{Shards: 4, Profile: vocab.ProfileRF})
		x := h.eng.TenantNamed("x")
		s1, s2 := h.session(), h.session()
		h.eng.SetTenant(s1, x)
		if bind {
			h.eng.SetTenant(s2, x)
		}
		h.do(s1, "incr", "c", "1")
		return h.eng.Digest()
	}
	if digest(false) == digest(true) {
		t.Fatal("a session's tenant is not in the digest")
	}
}

// A hold kept past its session's close (a cluster's failover) still
// counts against the tenant until its lease ends, in a restored engine as
// in the original.
func TestKeptHoldCountsUntilItsLeaseEnds(t *testing.T) {
	h := newHarness(t, Config{Shards: 4, Profile: vocab.ProfileRF})
	a := h.eng.TenantNamed("team-a")
	a.SetLimits(5, 0, 0)
	s1 := h.session()
	h.eng.SetTenant(s1, a)
	wantStatus(t, h.do(s1, "l", "k1", "0 2"), vocab.StatusOK)
	h.run(Command{Kind: KindClose, Session: s1, Keep: true})
	var snap bytes.Buffer
	if err := h.eng.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(h.eng.cfg, bytes.NewReader(snap.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != h.eng.Digest() {
		t.Fatal("digests differ")
	}
	for _, e := range []*Engine{h.eng, restored} {
		if c, _, _ := e.LookupTenant("team-a").Usage(); c != 1 {
			t.Fatalf("a kept hold: team-a counts %d claims, want 1", c)
		}
	}
	h.advance(3 * time.Second)
	var fx Effects
	restored.Advance(h.clock.Now(), &fx)
	for _, e := range []*Engine{h.eng, restored} {
		if c, _, _ := e.LookupTenant("team-a").Usage(); c != 0 {
			t.Fatalf("after the lease ended: team-a counts %d claims, want 0", c)
		}
	}
}

// A tagged acquire (godistlock's TRY and ON) is a claim like any other:
// within its session's tenant's locks and waiters quotas, counted while
// held or queued; its own hold's renewal is not a new claim.
func TestTaggedAcquireWithinQuotas(t *testing.T) {
	h := newHarness(t, Config{Shards: 4})
	a := h.eng.TenantNamed("team-a")
	a.SetLimits(2, 1, 0)
	s1, s2, other := h.session(), h.session(), h.session()
	h.eng.SetTenant(s1, a)
	h.eng.SetTenant(s2, a)
	wantStatus(t, h.acquireTagged(s1, []byte("g1"), 30000, false, 0), vocab.StatusOK)
	wantStatus(t, h.acquireTagged(s1, []byte("g1"), 30000, false, 0), vocab.StatusOK) // a renewal
	wantStatus(t, h.do(other, "l", "g2", "0 30"), vocab.StatusOK)
	// A wait on g2 is team-a's second claim and first waiter.
	if r := h.acquireTagged(s2, []byte("g2"), 30000, true, 7); !r.Blocked {
		t.Fatalf("a wait within the quotas: %+v, want parked", r)
	}
	// Past locks=2: refused on a free key, by a try and by a wait.
	wantStatus(t, h.acquireTagged(s2, []byte("g3"), 30000, false, 0), vocab.StatusErrorMaxLocks)
	wantStatus(t, h.acquireTagged(s1, []byte("g3"), 30000, true, 8), vocab.StatusErrorMaxLocks)
	if c, w, _ := a.Usage(); c != 2 || w != 1 {
		t.Fatalf("team-a counts %d claims and %d waiters, want 2 and 1", c, w)
	}
	if n := a.Refused[TenantClaims].Load(); n != 2 {
		t.Fatalf("team-a's refused claims: %d, want 2", n)
	}
	// Room again once g1 is released: the waiters quota then refuses a
	// second wait.
	if released, _ := h.releaseOwn(s1, []byte("g1")); !released {
		t.Fatal("g1 not released")
	}
	wantStatus(t, h.acquireTagged(s1, []byte("g2"), 30000, true, 9), vocab.StatusErrorMaxWaiters)
	wantStatus(t, h.acquireTagged(s1, []byte("g3"), 30000, false, 0), vocab.StatusOK)
}
