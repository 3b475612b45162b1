package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// dflockd_tls_certificate_expiry_timestamp_seconds: each certificate's
// not_after, read at every scrape (a reload shows at the next one); a
// certificate that reads as zero, and a server without TLS, show none.
func TestTLSCertificateExpiry(t *testing.T) {
	hub := session.NewHub(session.Config{}, nil, timerwheel.NewMonoClock())
	notAfter := time.Unix(1798761600, 0) // 2027-01-01T00:00:00Z
	reg := NewRegistry(Sources{Hub: hub, TLSNotAfter: map[string]func() time.Time{
		"tls-cert":      func() time.Time { return notAfter },
		"raft-tls-cert": func() time.Time { return time.Time{} },
	}})
	const name = "dflockd_tls_certificate_expiry_timestamp_seconds"
	want := func(v string) *strings.Reader {
		return strings.NewReader(`
# HELP dflockd_tls_certificate_expiry_timestamp_seconds Unix time at which a certificate this server presents expires (its not_after), by the flag that names it: tls-cert (the clients' listeners, reloaded on SIGHUP) or raft-tls-cert (the raft stream).
# TYPE dflockd_tls_certificate_expiry_timestamp_seconds gauge
dflockd_tls_certificate_expiry_timestamp_seconds{certificate="tls-cert"} ` + v + `
`)
	}
	if err := testutil.GatherAndCompare(reg, want("1.7987616e+09"), name); err != nil {
		t.Fatal(err)
	}
	notAfter = notAfter.Add(90 * 24 * time.Hour) // a SIGHUP loaded a renewed certificate
	if err := testutil.GatherAndCompare(reg, want("1.8065376e+09"), name); err != nil {
		t.Fatal(err)
	}
	reg = NewRegistry(Sources{Hub: hub})
	if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
		t.Fatalf("without TLS: %d series, %v", n, err)
	}
}
