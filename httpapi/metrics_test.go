package httpapi

import (
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The HTTP side's metrics, read as Prometheus reads them: GET /metrics of
// the server's registry, parsed by Prometheus's own text parser.

// scrape fetches and parses the server's /metrics (not through the
// validating client: the scrape itself is counted, and the tests count).
func scrape(t testing.TB, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(ts.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sample is the metric of family name whose labels are exactly want, or
// nil.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		return m
	}
	return nil
}

// counter is the value of a counter sample, 0 if absent.
func counter(t testing.TB, ts *testServer, name string, labels map[string]string) float64 {
	if m := sample(scrape(t, ts), name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

func TestHTTPMetrics(t *testing.T) {
	ts := newServer(t, setup{})
	created := map[string]string{"method": "POST", "path": "/v1/sessions", "status": "200"}
	if v := counter(t, ts, "dflockd_http_requests_total", created); v != 0 {
		t.Fatalf("creates counted before any: %v", v)
	}
	a, b := ts.newSession(), ts.newSession()
	ts.lock(a, "k", 0)
	ts.lock(b, "k", 0) // timeout: 200 too
	ts.send(req{method: "POST", path: "/v1/locks/k", body: "{}", session: "unknown"})
	ts.send(req{method: "WIBBLE", path: "/no/such/route"})
	ts.send(req{method: "GET", path: "/no/such/route"})

	fams := scrape(t, ts)
	checks := []struct {
		labels map[string]string
		want   float64
	}{
		{created, 2},
		{map[string]string{"method": "POST", "path": "/v1/locks/{key}", "status": "200"}, 2},
		{map[string]string{"method": "POST", "path": "/v1/locks/{key}", "status": "410"}, 1},
		// What clients send does not grow the label sets: an unknown
		// method is OTHER, an unknown path unmatched.
		{map[string]string{"method": "OTHER", "path": "unmatched", "status": "404"}, 1},
		{map[string]string{"method": "GET", "path": "unmatched", "status": "404"}, 1},
	}
	for _, c := range checks {
		m := sample(fams, "dflockd_http_requests_total", c.labels)
		if m == nil || m.GetCounter().GetValue() != c.want {
			t.Errorf("dflockd_http_requests_total%v = %v, want %v", c.labels, m, c.want)
		}
	}
	if m := sample(fams, "dflockd_http_sessions", map[string]string{}); m == nil || m.GetGauge().GetValue() != 2 {
		t.Errorf("dflockd_http_sessions = %v, want 2", m)
	}
	h := sample(fams, "dflockd_http_request_duration_seconds", map[string]string{"method": "POST", "path": "/v1/sessions"})
	if h == nil || h.GetHistogram().GetSampleCount() != 2 || h.GetHistogram().GetSampleSum() <= 0 {
		t.Errorf("dflockd_http_request_duration_seconds{POST /v1/sessions} = %v, want 2 samples", h)
	}

	// The counters move.
	expect(t, "delete", ts.send(req{method: "DELETE", path: "/v1/sessions/" + a}), 204, "")
	fams = scrape(t, ts)
	if m := sample(fams, "dflockd_http_requests_total", map[string]string{"method": "DELETE", "path": "/v1/sessions/{id}", "status": "204"}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("the delete was not counted: %v", m)
	}
	if m := sample(fams, "dflockd_http_sessions", map[string]string{}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("dflockd_http_sessions after a delete = %v, want 1", m)
	}
	// The scrapes count themselves under their route.
	if m := sample(fams, "dflockd_http_requests_total", map[string]string{"method": "GET", "path": "/metrics", "status": "200"}); m == nil || m.GetCounter().GetValue() < 2 {
		t.Errorf("the scrapes were not counted: %v", m)
	}
}
