package httpapi

import (
	"testing"
)

// /metrics's credential: the scrapers' token opens /metrics and nothing
// else, the clients' token opens it too, and MetricsOpen opens it to
// anyone while the other routes keep wanting the clients' token.
func TestMetricsToken(t *testing.T) {
	const client, scraper = "client-token", "scraper-token"
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	get := func(ts *testServer, path string, h map[string]string) *reply {
		return ts.send(req{method: "GET", path: path, header: h})
	}

	ts := newServer(t, setup{cfg: Config{AuthToken: client, MetricsToken: scraper}})
	expect(t, "/metrics with the scrapers' token", get(ts, "/metrics", bearer(scraper)), 200, "")
	expect(t, "/metrics with the clients' token", get(ts, "/metrics", bearer(client)), 200, "")
	expect(t, "/metrics without a token", get(ts, "/metrics", nil), 401, codeUnauthorized)
	expect(t, "/metrics with a wrong token", get(ts, "/metrics", bearer(scraper+"x")), 401, codeUnauthorized)
	expect(t, "/v1/stats with the scrapers' token", get(ts, "/v1/stats", bearer(scraper)), 401, codeUnauthorized)
	expect(t, "a session with the scrapers' token",
		ts.send(req{method: "POST", path: "/v1/sessions", header: bearer(scraper)}), 401, codeUnauthorized)
	expect(t, "/v1/stats with the clients' token", get(ts, "/v1/stats", bearer(client)), 200, "")

	// A scrapers' token alone guards /metrics only.
	ts = newServer(t, setup{cfg: Config{MetricsToken: scraper}})
	expect(t, "/metrics without a token, only a metrics token set", get(ts, "/metrics", nil), 401, codeUnauthorized)
	expect(t, "/metrics with the scrapers' token, only it set", get(ts, "/metrics", bearer(scraper)), 200, "")
	expect(t, "/metrics with another token, only a metrics token set", get(ts, "/metrics", bearer(client)), 401, codeUnauthorized)
	expect(t, "/v1/stats without a token, only a metrics token set", get(ts, "/v1/stats", nil), 200, "")

	// Open by choice: /metrics answers anyone, the rest still wants the
	// clients' token.
	ts = newServer(t, setup{cfg: Config{AuthToken: client, MetricsOpen: true}})
	expect(t, "/metrics without a token, open", get(ts, "/metrics", nil), 200, "")
	expect(t, "/v1/stats without a token, /metrics open", get(ts, "/v1/stats", nil), 401, codeUnauthorized)
}
