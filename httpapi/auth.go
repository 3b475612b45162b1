package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// withAuth requires the bearer token on every route but the probes and
// the OpenAPI document (which describes how to authenticate). A request
// without the right token waits authFailDelay, then gets 401: that makes
// guessing slow. The wait is a node of the API's timer wheel and holds
// only the request's own goroutine; it ends early if the client leaves.
func (a *API) withAuth(next http.Handler) http.Handler {
	if a.cfg.AuthToken == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/ready", "/v1/openapi.json":
			next.ServeHTTP(w, r)
			return
		}
		if a.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		a.refuse(w, r, `Bearer realm="dflockd"`)
	})
}

// refuse answers 401 after authFailDelay, with challenge (if not empty)
// in WWW-Authenticate.
func (a *API) refuse(w http.ResponseWriter, r *http.Request, challenge string) {
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
	writeError(w, http.StatusUnauthorized, codeUnauthorized, "")
}

// authorized compares the request's bearer token with the configured one
// in constant time. Both are hashed first, so that the comparison does
// not stop early on a length mismatch and leak the token's length.
func (a *API) authorized(r *http.Request) bool {
	const scheme = "Bearer "
	h := r.Header.Get("Authorization")
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return false // the auth scheme is case-insensitive (RFC 9110 §11.1)
	}
	return sameToken(strings.TrimSpace(h[len(scheme):]), &a.tokenSum)
}

// sameToken compares got with the token whose SHA-256 is want, in
// constant time whatever their lengths.
func sameToken(got string, want *[sha256.Size]byte) bool {
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}
