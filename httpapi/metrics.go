package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the HTTP side's metrics, under dflockd v2's names:
//
//	dflockd_http_sessions                              gauge: open sessions
//	dflockd_http_requests_total{method,path,status}   counter
//	dflockd_http_request_duration_seconds{method,path} histogram
//
// path is the route's pattern ("/v1/locks/{key}"), "unmatched" for a
// request no route takes, never the URL; a method net/http does not
// define is "OTHER". So what clients send cannot grow the label sets.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer, a *API) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dflockd_http_requests_total",
			Help: "HTTP API requests, by method, route and status code.",
		}, []string{"method", "path", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "dflockd_http_request_duration_seconds",
			Help:    "Time to answer HTTP API requests (a blocking acquire counts its wait), by method and route.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "path"}),
	}
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dflockd_http_sessions",
		Help: "Open HTTP API sessions.",
	}, func() float64 { return float64(a.Sessions()) })
	for _, c := range []prometheus.Collector{m.requests, m.duration, sessions} {
		if err := reg.Register(c); err != nil {
			panic("httpapi: registering the HTTP metrics: " + err.Error())
		}
	}
	return m
}

// count counts one answered request (observe.go measures it).
func (m *httpMetrics) count(method, path string, code int, took time.Duration) {
	m.requests.WithLabelValues(method, path, statusLabel(code)).Inc()
	m.duration.WithLabelValues(method, path).Observe(took.Seconds())
}

// pathLabel is the pattern of the route that took r: the mux records it
// in r.Pattern; a request answered before the mux (401, 429, preflight)
// is looked up.
func (a *API) pathLabel(r *http.Request) string {
	p := r.Pattern
	if p == "" {
		_, p = a.mux.Handler(r)
	}
	if _, path, ok := strings.Cut(p, " "); ok {
		p = path // "POST /v1/locks/{key}": the method has its own label
	}
	if p == "" || p == "/" {
		return "unmatched"
	}
	return p
}

func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// statusLabels spares the common codes a conversion per request.
var statusLabels = map[int]string{}

func init() {
	for _, c := range []int{200, 204, 400, 401, 404, 405, 408, 409, 410, 429, 500, 503} {
		statusLabels[c] = strconv.Itoa(c)
	}
}

func statusLabel(code int) string {
	if s, ok := statusLabels[code]; ok {
		return s
	}
	return strconv.Itoa(code)
}
