package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// authExempt are the routes served without the bearer token: the probes,
// the document that says how to authenticate, and the page, which asks
// for the token itself (auth.go). Every other route wants it.
var authExempt = map[string]bool{
	"GET /health": true, "GET /ready": true, "GET /v1/openapi.json": true, "GET " + uiPath: true,
}

// Every route of the API's own table, with --auth-token set: without the
// token (or with a wrong one) each non-exempt route answers 401
// unauthorized; with it, something else; the exempt ones answer 200
// without it. A route added to the table is checked without anyone
// listing it here.
func TestEveryRouteWantsTheToken(t *testing.T) {
	const token, admin = "route-token", "admin-token"
	ts := observed(t, Config{AuthToken: token, AdminToken: admin})
	// Path wildcards get values that make a well-formed request.
	fill := strings.NewReplacer("{key}", "k", "{id}", "0123456789abcdef0123456789abcdef", "{channel}", "c")
	rts := ts.api.routeTable()
	if len(rts) < 20 {
		t.Fatalf("the route table has %d routes: not the API's", len(rts))
	}
	seen := map[string]bool{}
	for _, rt := range rts {
		method, path, ok := strings.Cut(rt.pattern, " ")
		if !ok {
			t.Fatalf("route %q has no method", rt.pattern)
		}
		seen[rt.pattern] = true
		path = fill.Replace(path)
		t.Run(rt.pattern, func(t *testing.T) {
			t.Parallel()
			if authExempt[rt.pattern] {
				if st, body := ts.rawStatus(t, method, path, nil); st != 200 {
					t.Fatalf("%s %s without the token: %d %s, want 200 (exempt)", method, path, st, body)
				}
				return
			}
			for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong"}, {"Authorization": "Bearer " + token + "x"}} {
				st, body := ts.rawStatus(t, method, path, h)
				var e struct{ Error string }
				if st != 401 || json.Unmarshal([]byte(body), &e) != nil || e.Error != codeUnauthorized {
					t.Fatalf("%s %s with Authorization %q: %d %s, want 401 unauthorized", method, path, h["Authorization"], st, body)
				}
			}
			// The admin token alone opens nothing either.
			if st, body := ts.rawStatus(t, method, path, map[string]string{adminHeader: admin}); st != 401 {
				t.Fatalf("%s %s with only the admin token: %d %s, want 401", method, path, st, body)
			}
			st, body := ts.rawStatus(t, method, path, map[string]string{"Authorization": "Bearer " + token, adminHeader: admin})
			if st == 401 {
				t.Fatalf("%s %s with the token: 401 %s", method, path, body)
			}
		})
	}
	for p := range authExempt {
		if !seen[p] {
			t.Errorf("exempt route %q is not in the route table", p)
		}
	}
}

// rawStatus makes a request without the validating client (a stream's
// body never ends: only its status and headers are awaited) and returns
// the status and the start of the body.
func (ts *testServer) rawStatus(t *testing.T, method, path string, header map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, method, ts.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	resp, err := ts.tr.RoundTrip(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body := ""
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		body = strings.TrimSpace(string(b))
	}
	return resp.StatusCode, body
}
