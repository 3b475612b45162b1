package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// withAuth requires the bearer token on every route but the probes and
// the OpenAPI document (which describes how to authenticate). /metrics
// takes the scrapers' own token as well (Config.MetricsToken), or none
// with Config.MetricsOpen: Prometheus sends one credential per scrape
// job (authorization: credentials_file:), and a scraper should hold
// one that takes no lock. A request without the right token waits
// authFailDelay, then gets 401: that makes guessing slow. The wait is a
// node of the API's timer wheel and holds only the request's own
// goroutine; it ends early if the client leaves. The body of a refused
// request is not read: the 401 closes the connection (closeUnread).
func (a *API) withAuth(next http.Handler) http.Handler {
	if a.hub.Policy() != nil {
		return a.withIdentity(next)
	}
	metricsGuarded := !a.cfg.MetricsOpen && (a.cfg.AuthToken != "" || a.cfg.MetricsToken != "")
	if a.cfg.AuthToken == "" && !metricsGuarded {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := false
		switch r.URL.Path {
		case "/health", "/ready", "/v1/openapi.json", uiPath: // the page asks for the token itself (ui.go)
			ok = true
		case "/metrics":
			ok = !metricsGuarded || a.metricsAuthorized(r)
		default:
			ok = a.cfg.AuthToken == "" || a.authorized(r)
		}
		if ok {
			next.ServeHTTP(w, r)
			return
		}
		a.refuse(w, r, `Bearer realm="dflockd"`)
	})
}

// refuse answers 401 after authFailDelay, with challenge (if not empty)
// in WWW-Authenticate, and logs the refusal within the rate limit of
// client incidents. A refusal with a challenge is a bearer token's; one
// without, the admin token's (cluster.go).
func (a *API) refuse(w http.ResponseWriter, r *http.Request, challenge string) {
	credential, header := "bearer", "Authorization"
	if challenge == "" {
		credential, header = "admin", adminHeader
	}
	// The path, not the URL: a query string is the client's to fill,
	// and the token is never logged, only whether one came.
	a.cfg.Events.Warn("http request unauthorized", "remote", r.RemoteAddr, "method", r.Method,
		"path", r.URL.Path, "credential", credential, "presented", r.Header.Get(header) != "")
	al := a.timers.after(authFailDelay)
	select {
	case <-al.ring:
	case <-r.Context().Done():
		a.timers.Cancel(&al.node)
	case <-a.stop: // Shutdown stops the timers: answer now
		a.timers.Cancel(&al.node)
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	closeUnread(w, r)
	writeError(w, http.StatusUnauthorized, codeUnauthorized, "")
}

// authorized compares the request's bearer token with the configured one
// in constant time.
func (a *API) authorized(r *http.Request) bool {
	t, ok := bearerToken(r)
	return ok && sameToken(t, &a.tokenSum)
}

// metricsAuthorized accepts, on /metrics, the clients' token or the
// scrapers' (each only when configured). Both are compared, whichever
// matches, so the time taken tells nothing of which one did.
func (a *API) metricsAuthorized(r *http.Request) bool {
	t, ok := bearerToken(r)
	if !ok {
		return false
	}
	client := sameToken(t, &a.tokenSum) && a.cfg.AuthToken != ""
	scraper := sameToken(t, &a.metricsSum) && a.cfg.MetricsToken != ""
	return client || scraper
}

// bearerToken is the token of the request's "Authorization: Bearer"
// header; the scheme is case-insensitive (RFC 9110 §11.1), and blanks
// around the token do not count.
func bearerToken(r *http.Request) (string, bool) {
	const scheme = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimSpace(h[len(scheme):]), true
}

// sameToken compares got with the token whose SHA-256 is want, in
// constant time whatever their lengths. Both are hashed first, so that
// the comparison does not stop early on a length mismatch and leak the
// token's length.
func sameToken(got string, want *[sha256.Size]byte) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}
