package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/dflockd-ng/dflockd/policy"
	"github.com/dflockd-ng/dflockd/session"
)

// With a policy (package policy, session/acl.go), the bearer token names an
// identity, as a line-protocol client's auth line does: the --auth-token
// holder may do everything, a policy identity what its rules allow. Each
// route then checks the class it needs on the key it names (guard);
// a refusal is 403 {"error":"forbidden"} with the deciding rule in the
// detail, and joins the hub's refusal log.
//
// The observatory's lists, /v1/events and /v1/stats are scoped to the
// caller (scope.go): observe on some key is enough to call them. The
// routes of the whole server need their class on every key ("allow
// admin *", "allow metrics *"): the refusal log shows every identity's
// refusals, the check any identity's rules, the metrics every identity's
// figures, and the membership is the cluster's. An identity allowed
// everything on its own prefix is allowed none of them.

type identityKey struct{}

// callerIdentity is the identity withIdentity found for r; nil without a
// policy.
func callerIdentity(r *http.Request) *policy.Identity {
	id, _ := r.Context().Value(identityKey{}).(*policy.Identity)
	return id
}

// callerName is the name of r's identity, "" without a policy.
func callerName(r *http.Request) string {
	if id := callerIdentity(r); id != nil {
		return id.Name
	}
	return ""
}

// everyone is the --auth-token holder's identity under a policy.
var everyone = policy.Everyone(session.AuthTokenIdentity)

// identify returns the identity whose token r bears, or nil. Both the
// --auth-token and the policy's tokens are compared, in constant time.
func (a *API) identify(r *http.Request, p *policy.Policy) *policy.Identity {
	t, ok := bearerToken(r)
	if !ok {
		return nil
	}
	var id *policy.Identity
	if a.cfg.AuthToken != "" && sameToken(t, &a.tokenSum) {
		id = everyone
	}
	if byToken := p.ByToken([]byte(t)); byToken != nil && id == nil {
		id = byToken
	}
	return id
}

// withIdentity is withAuth under a policy: every route but the probes,
// the OpenAPI document and the page wants a token that names an
// identity; /metrics also takes the scrapers' token, or none with
// MetricsOpen.
func (a *API) withIdentity(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/ready", "/v1/openapi.json", uiPath:
			next.ServeHTTP(w, r)
			return
		case "/metrics":
			if a.cfg.MetricsOpen || a.cfg.MetricsToken != "" && a.metricsScraper(r) {
				next.ServeHTTP(w, r)
				return
			}
		}
		p := a.hub.Policy()
		id := a.identify(r, p)
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
			// A client certificate names an identity too (--tls-client-ca);
			// with a token as well, the two must agree.
			byCert := p.ByCertificate(r.TLS.PeerCertificates[0])
			if id != nil && byCert != nil && id.Name != byCert.Name {
				id = nil
			} else if id == nil {
				id = byCert
			}
		}
		if id == nil {
			a.refuse(w, r, `Bearer realm="dflockd"`)
			return
		}
		if wait := a.hub.RateWait(id); wait > 0 && !a.hold(r.Context(), wait) {
			// Over its rate quota the request was held until its turn,
			// as a line connection's reading is paused, and its client
			// left meanwhile: nobody to answer (net/http closes the
			// connection, logging nothing).
			panic(http.ErrAbortHandler)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// holdFor waits d, or until ctx ends (false).
func holdFor(ctx context.Context, d time.Duration) bool {
	held, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	<-held.Done()
	return ctx.Err() == nil
}

// metricsScraper reports whether r bears the scrapers' token.
func (a *API) metricsScraper(r *http.Request) bool {
	t, ok := bearerToken(r)
	return ok && sameToken(t, &a.metricsSum)
}

// routeCheck is what a route needs of the caller's identity: a class on
// the key a path value or query parameter names, a class on some key, or
// a class on every key.
type routeCheck struct {
	class   policy.Class
	path    string // the path value that is the key
	query   string // or the query parameter that is a pattern
	some    bool   // the class on some key (keyless routes scoped to the caller)
	all     bool   // the class on every key (server-wide routes: unscoped lists, the refusal log, metrics, membership)
	nothing bool   // any identity may call it
}

// routeChecks is the check of every route; a route missing here is
// refused to every policy identity (deny by default).
var routeChecks = map[string]routeCheck{
	"POST /v1/sessions":                  {nothing: true},
	"DELETE /v1/sessions/{id}":           {nothing: true},
	"POST /v1/sessions/{id}/ping":        {nothing: true},
	"GET /v1/readindex":                  {nothing: true},
	"GET /v1/openapi.json":               {nothing: true},
	"GET /health":                        {nothing: true},
	"GET /ready":                         {nothing: true},
	"GET " + uiPath:                      {nothing: true}, // the page; its data routes are checked
	"GET /v1/stats":                      {class: policy.Observe, some: true},
	"GET /v1/acl/whoami":                 {nothing: true},
	"GET /v1/acl/log":                    {class: policy.Admin, all: true},
	"GET /v1/acl/check":                  {class: policy.Admin, all: true},
	"GET /metrics":                       {class: policy.Metrics, all: true},
	"GET /v1/signals":                    {class: policy.Listen, query: "pattern"},
	"POST /v1/signals/{channel}":         {class: policy.Signal, path: "channel"},
	"GET /v1/keys":                       {class: policy.Observe, some: true},
	"GET /v1/keys/{key}":                 {class: policy.Observe, path: "key"},
	"GET /v1/events":                     {class: policy.Observe, some: true},
	"GET /v1/deadlocks":                  {class: policy.Observe, some: true},
	"GET /v1/hotkeys":                    {class: policy.Observe, some: true},
	"POST /v1/admin/locks/{key}/release": {class: policy.Admin, path: "key"},
	"POST /v1/admin/voters":              {class: policy.Admin, all: true},
	"DELETE /v1/admin/voters/{id}":       {class: policy.Admin, all: true},
	"GET /v1/admin/snapshot":             {class: policy.Admin, all: true},
	"POST /v1/locks/{key}":               {class: policy.Lock, path: "key"},
	"POST /v1/locks/{key}/release":       {class: policy.Lock, path: "key"},
	"POST /v1/locks/{key}/renew":         {class: policy.Lock, path: "key"},
	"POST /v1/locks/{key}/enqueue":       {class: policy.Lock, path: "key"},
	"POST /v1/locks/{key}/wait":          {class: policy.Lock, path: "key"},
	"POST /v1/semaphores/{key}":          {class: policy.Lock, path: "key"},
	"POST /v1/semaphores/{key}/release":  {class: policy.Lock, path: "key"},
	"POST /v1/semaphores/{key}/renew":    {class: policy.Lock, path: "key"},
	"POST /v1/semaphores/{key}/enqueue":  {class: policy.Lock, path: "key"},
	"POST /v1/semaphores/{key}/wait":     {class: policy.Lock, path: "key"},
}

// everyKey is the pattern of every key: an identity allowed it for a
// class may use the class on any key.
var everyKey = []byte(">")

// guard wraps a route's handler with its check under a policy.
func (a *API) guard(pattern string, h http.HandlerFunc) http.HandlerFunc {
	chk, known := routeChecks[pattern]
	return func(w http.ResponseWriter, r *http.Request) {
		id := callerIdentity(r)
		if id == nil || id.Everything() || known && chk.nothing {
			h(w, r)
			return
		}
		var allowed bool
		key, isPattern := "", false
		switch {
		case !known:
		case chk.some:
			allowed = id.AllowsSome(chk.class)
		case chk.all:
			allowed = id.AllowsPattern(chk.class, everyKey)
			key, isPattern = ">", true
		case chk.query != "":
			key, isPattern = r.URL.Query().Get(chk.query), true
			allowed = key == "" || id.AllowsPattern(chk.class, []byte(key)) // "" is the handler's 400
		default:
			key = r.PathValue(chk.path)
			allowed = id.Allows(chk.class, []byte(key))
		}
		if allowed {
			h(w, r)
			return
		}
		why := "no check is defined for this route (deny by default)"
		if known {
			_, why = id.Explain(chk.class, []byte(key), isPattern)
		}
		a.hub.RecordRefusal(session.Refusal{Identity: id.Name, Remote: r.RemoteAddr, Command: pattern,
			Key: key, Class: chk.class.String(), Reason: why})
		writeError(w, http.StatusForbidden, codeForbidden, "identity "+id.Name+": "+why)
	}
}
