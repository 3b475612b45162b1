package loadgen

import (
	"crypto/tls"
	"testing"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// tlsFake starts a fake whose listener is TLS only, with a certificate for
// 127.0.0.1 signed by ca.
func tlsFake(t *testing.T, ca *certtest.CA, redis bool) *fakeServer {
	t.Helper()
	leaf := ca.Leaf(t, "fake")
	return startFake(t, func(f *fakeServer) {
		f.redis = redis
		f.tls = &tls.Config{Certificates: []tls.Certificate{leaf.TLS}, MinVersion: tls.VersionTLS12}
	})
}

// With Config.TLS every connection is a TLS client: both protocols run
// against TLS-only servers, trusting their CA or skipping verification,
// and the result says TLS.
func TestTLSRuns(t *testing.T) {
	ca := certtest.NewCA(t, "loadgen CA")
	for _, redis := range []bool{false, true} {
		proto := ProtoLine
		if redis {
			proto = ProtoRedis
		}
		for _, cfgTLS := range []*tls.Config{{RootCAs: ca.Pool}, {InsecureSkipVerify: true}} {
			cfg := quick("", proto, Lock, 2, 4)
			cfg.TLS = cfgTLS
			f, res := runFake(t, func() *fakeServer { return tlsFake(t, ca, redis) }, cfg, somePairs)
			if f.rejected.Load() != 0 || !res.TLS {
				t.Errorf("%s: pairs=%d rejected=%d tls=%v", proto, res.Pairs, f.rejected.Load(), res.TLS)
			}
		}
	}
}

// A server whose certificate the client does not trust fails the run at
// its first dial, and so does a plaintext client of a TLS server.
func TestTLSDialFailures(t *testing.T) {
	ca := certtest.NewCA(t, "loadgen CA")
	f := tlsFake(t, ca, false)
	cfg := quick(f.addr(), ProtoLine, Lock, 1, 1)
	cfg.TLS = &tls.Config{RootCAs: certtest.NewCA(t, "another CA").Pool}
	mustFail(t, cfg, "dial "+f.addr(), "TLS handshake", "certificate signed by unknown authority")

	cfg.TLS = nil
	mustFail(t, cfg, "connection closed by the target")
}
