package httpapi

import "net/http"

// corsPolicy is --http-cors-allowed-origins: which browser origins may
// call the API.
type corsPolicy struct {
	any     bool // "*"
	origins map[string]bool
}

func newCORSPolicy(origins []string) *corsPolicy {
	p := &corsPolicy{origins: make(map[string]bool, len(origins))}
	for _, o := range origins {
		if o == "*" {
			p.any = true
		}
		p.origins[o] = true
	}
	return p
}

// What an allowed origin may do, as dflockd answers it, and the admin
// routes' header besides (cluster membership, the observatory's force
// release): without it a page holding the admin token could not call them.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS"
	corsHeaders = "Authorization, Content-Type, X-Dflockd-Session, " + adminHeader
	corsMaxAge  = "300" // seconds a browser may cache a preflight
)

// withCORS adds the CORS headers for an allowed Origin and answers
// preflight requests (OPTIONS with Access-Control-Request-Method) with
// 204 itself: they carry no credentials, so they come before auth and
// the rate limit. A preflight from an origin not allowed also gets 204,
// without the headers, and the browser refuses the call.
func (a *API) withCORS(next http.Handler) http.Handler {
	if a.cors == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			a.cors.writeHeaders(w.Header(), origin)
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *corsPolicy) writeHeaders(h http.Header, origin string) {
	switch {
	case p.any:
		h.Set("Access-Control-Allow-Origin", "*")
	case p.origins[origin]:
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin") // the answer depends on the Origin: caches must key on it
	default:
		return
	}
	h.Set("Access-Control-Allow-Methods", corsMethods)
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
}
