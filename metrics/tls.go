package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// tlsExpiry is dflockd_tls_certificate_expiry_timestamp_seconds: the
// not_after of each certificate the server presents, read at every scrape
// so that a SIGHUP's reload shows at the next one. An alert on it
// (dist/prometheus) warns before a certificate runs out, which otherwise
// shows only as clients failing their handshakes.
type tlsExpiry struct {
	certs map[string]func() time.Time
	desc  *prometheus.Desc
}

func newTLSExpiry(certs map[string]func() time.Time) *tlsExpiry {
	return &tlsExpiry{certs: certs, desc: desc("dflockd_tls_certificate_expiry_timestamp_seconds",
		"Unix time at which a certificate this server presents expires (its not_after), by the flag that names it: tls-cert (the clients' listeners, reloaded on SIGHUP) or raft-tls-cert (the raft stream).",
		"certificate")}
}

func (c *tlsExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *tlsExpiry) Collect(ch chan<- prometheus.Metric) {
	for name, notAfter := range c.certs {
		if t := notAfter(); !t.IsZero() {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(t.Unix()), name)
		}
	}
}
