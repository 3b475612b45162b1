package httpapi

import (
	"net/http"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/vocab"
)

// The observatory scoped to the caller (with a policy): an identity sees
// the keys it may observe, in every list, and nothing of the others — not
// their holders, waiters, events or deadlocks. An identity that may
// observe every key, or the --auth-token holder, or any caller without a
// policy, sees everything (scope nil).

// maxScopedPages bounds the engine pages one /v1/keys reply reads for a
// scoped caller, so that an identity that sees few keys among many cannot
// make one request scan them all.
const maxScopedPages = 16

// scope is the caller's view: nil sees every key.
type scope struct{ id *policy.Identity }

// observeScope returns r's scope, nil when r sees everything.
func observeScope(r *http.Request) *scope {
	id := callerIdentity(r)
	if id == nil || id.Everything() || id.AllowsPattern(policy.Observe, everyKey) {
		return nil
	}
	return &scope{id: id}
}

// sees reports whether the scope shows key.
func (s *scope) sees(key string) bool { return s == nil || s.id.Allows(policy.Observe, []byte(key)) }

// seesAll reports whether the scope shows every one of keys.
func (s *scope) seesAll(keys []string) bool {
	for _, k := range keys {
		if !s.sees(k) {
			return false
		}
	}
	return true
}

// scopedStats is /v1/stats for a scoped caller: the document of the
// server's profile with only the keys it may observe, and its own
// connections.
func (a *API) scopedStats(s *scope) []byte {
	p := a.hub.Profile()
	st := a.hub.Stats(p == vocab.ProfileRF)
	s.id.ScopeStats(st)
	st.Connections = a.hub.IdentityConnections(s.id.Name)
	return parse.AppendStats(nil, st, p)
}

// seesDeadlock reports whether the scope shows every key of d.
func (s *scope) seesDeadlock(d *foundDeadlock) bool {
	if s == nil {
		return true
	}
	for _, k := range d.Keys {
		if !s.sees(k.Key) {
			return false
		}
	}
	for _, w := range d.Waits {
		if !s.sees(w.Key.Key) {
			return false
		}
	}
	return true
}
