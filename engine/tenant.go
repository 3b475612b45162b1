package engine

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dflockd-ng/dflockd/vocab"
)

// Tenant is what the sessions of one identity hold together, and the
// bounds on it (a policy's quotas, package policy): claims on locks,
// semaphore slots and read-write locks (held or queued), queued waiters,
// and keys made (counters, KV entries, lists). A session gets its tenant
// from SetTenant, once, before it claims anything; every slot of the
// session counts against it from then on, whoever grants or frees it, so
// a lease that ends or a disconnect gives its share back.
//
// Tenants are engine state, named by their identity (TenantNamed): on a
// cluster every replica makes, binds and bounds them as the log says
// (cluster.OpTenant), and the snapshot and the digest carry them, so a
// restored replica counts exactly as one that replayed the log.
// The counters are atomics: the sessions of one identity run on several
// loops.
type Tenant struct {
	name                  string
	claims, waiting, keys atomic.Int64
	// The bounds, 0 = none; a policy reload changes them in place.
	maxClaims, maxWaiting, maxKeys atomic.Int64
	// Refused counts the requests each bound refused: claims, waiters,
	// keys (TenantClaims...).
	Refused [3]atomic.Uint64
}

// The bounds of a tenant, indexing Tenant.Refused.
const (
	TenantClaims = iota
	TenantWaiters
	TenantKeys
)

// Name is the identity the tenant is named for.
func (t *Tenant) Name() string { return t.name }

// Limits reports the tenant's bounds: claims, queued waiters and keys;
// 0 = none.
func (t *Tenant) Limits() (claims, waiting, keys int64) {
	return t.maxClaims.Load(), t.maxWaiting.Load(), t.maxKeys.Load()
}

// tenantTable is an engine's tenants by name. Tenants are few (one per
// identity with a quota) and made at an auth, never on the request path.
type tenantTable struct {
	mu sync.Mutex
	m  map[string]*Tenant
}

// TenantNamed returns the engine's tenant named name, made without
// bounds on first use.
func (e *Engine) TenantNamed(name string) *Tenant {
	tt := &e.tenants
	tt.mu.Lock()
	defer tt.mu.Unlock()
	t := tt.m[name]
	if t == nil {
		if tt.m == nil {
			tt.m = make(map[string]*Tenant)
		}
		t = &Tenant{name: name}
		tt.m[name] = t
	}
	return t
}

// LookupTenant returns the tenant named name, or nil if there is none.
func (e *Engine) LookupTenant(name string) *Tenant {
	e.tenants.mu.Lock()
	defer e.tenants.mu.Unlock()
	return e.tenants.m[name]
}

// sortedTenants lists the engine's tenants by name (snapshot, digest).
func (e *Engine) sortedTenants() []*Tenant {
	e.tenants.mu.Lock()
	out := make([]*Tenant, 0, len(e.tenants.m))
	for _, t := range e.tenants.m {
		out = append(out, t)
	}
	e.tenants.mu.Unlock()
	slices.SortFunc(out, func(a, b *Tenant) int { return strings.Compare(a.name, b.name) })
	return out
}

// SetLimits sets the tenant's bounds: claims (held or queued), queued
// waiters and keys; 0 = no bound. What is already over a lowered bound
// stays until it ends; new claims wait for room.
func (t *Tenant) SetLimits(claims, waiting, keys int64) {
	t.maxClaims.Store(claims)
	t.maxWaiting.Store(waiting)
	t.maxKeys.Store(keys)
}

// Usage reports the tenant's claims (held and queued), queued waiters and
// keys now.
func (t *Tenant) Usage() (claims, waiting, keys int64) {
	return t.claims.Load(), t.waiting.Load(), t.keys.Load()
}

// SetTenant makes t the tenant of session id; it must run before the
// session's first claim, on the session's goroutine (an auth). A session
// id that is not open is ignored.
func (e *Engine) SetTenant(id SessionID, t *Tenant) {
	if s := e.sessions.get(id); s != nil {
		s.tenant = t
	}
}

// tenantOf is session id's tenant, or nil.
func (e *Engine) tenantOf(id SessionID) *Tenant {
	if s := e.sessions.get(id); s != nil {
		return s.tenant
	}
	return nil
}

// admitClaim reports the status of a new claim by sess on a key: OK, or
// the quota reply when its tenant has no room (queue: the claim would
// wait). Nothing is counted here: the slot's state does that (setState).
func (sess *session) admitClaim(queue bool) vocab.Status {
	t := sess.tenant
	if t == nil {
		return vocab.StatusOK
	}
	if max := t.maxClaims.Load(); max > 0 && t.claims.Load() >= max {
		t.Refused[TenantClaims].Add(1)
		return vocab.StatusErrorMaxLocks
	}
	if max := t.maxWaiting.Load(); queue && max > 0 && t.waiting.Load() >= max {
		t.Refused[TenantWaiters].Add(1)
		return vocab.StatusErrorMaxWaiters
	}
	return vocab.StatusOK
}

// setState moves sl to state st, counting the move against its session's
// tenant: a claim is a slot waiting, holding or lapsed, a waiter one
// waiting.
func (sl *slot) setState(st slotState) {
	if sl.sess != nil && sl.sess.tenant != nil && sl.state() != st {
		t := sl.sess.tenant
		claim := func(s slotState) int64 {
			if s == slotFree {
				return 0
			}
			return 1
		}
		wait := func(s slotState) int64 {
			if s == slotWaiting {
				return 1
			}
			return 0
		}
		if d := claim(st) - claim(sl.state()); d != 0 {
			t.claims.Add(d)
		}
		if d := wait(st) - wait(sl.state()); d != 0 {
			t.waiting.Add(d)
		}
	}
	sl.setStateBits(st)
}

// admitTenantKey reserves one of the tenant's keys; false: its quota is
// reached. A nil tenant always has room.
func admitTenantKey(t *Tenant) bool {
	if t == nil {
		return true
	}
	n := t.keys.Add(1)
	if max := t.maxKeys.Load(); max > 0 && n > max {
		t.keys.Add(-1)
		t.Refused[TenantKeys].Add(1)
		return false
	}
	return true
}

// forgetTenantKey gives a key back to its tenant.
func forgetTenantKey(t *Tenant) {
	if t != nil {
		t.keys.Add(-1)
	}
}

// leaveTenant stops counting sl against its session's tenant, for a slot
// that outlives its session's claim on it (an rf lease's lapsed record).
func (sl *slot) leaveTenant() {
	if sl.sess == nil || sl.sess.tenant == nil || sl.state() == slotFree {
		return
	}
	sl.sess.tenant.claims.Add(-1)
	if sl.state() == slotWaiting {
		sl.sess.tenant.waiting.Add(-1)
	}
}
