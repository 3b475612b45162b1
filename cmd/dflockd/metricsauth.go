package main

// The /metrics credential. With --auth-token, /metrics wants a bearer
// token like every other route, and a Prometheus server would have to
// hold the clients' token, which takes and releases locks. So a scraper
// gets one of its own: --metrics-token (or --metrics-token-file, the
// form a Kubernetes secret or systemd's LoadCredential= hands over),
// good for /metrics only and nowhere else; in Prometheus:
//
//	authorization:
//	  credentials_file: /etc/prometheus/dflockd-metrics-token
//
// Or the operator says in so many words that /metrics is open:
// --metrics-auth=none (the metrics then need the network's protection).

import (
	"fmt"
)

// The values of --metrics-auth.
const (
	// metricsAuthToken: /metrics wants --auth-token or --metrics-token,
	// when either is set (open when neither is, as the other routes).
	metricsAuthToken = "token"
	// metricsAuthNone: /metrics is open, even with --auth-token.
	metricsAuthNone = "none"
)

// resolveMetricsToken resolves --metrics-token as the admin token is
// (resolveHeaderToken), and checks it does not contradict
// --metrics-auth=none. The token is never echoed.
func resolveMetricsToken(h *HTTPConfig) error {
	what, err := resolveHeaderToken(&h.MetricsToken, h.MetricsTokenFile, "--metrics-token", "DFLOCKD_METRICS_TOKEN")
	if err == nil && h.MetricsToken != "" && h.MetricsAuth == metricsAuthNone {
		err = fmt.Errorf("%s contradicts --metrics-auth=none (DFLOCKD_METRICS_AUTH): a token for an open /metrics; give one of them", what)
	}
	return err
}
