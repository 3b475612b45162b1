package netconn

import (
	"crypto/tls"
	"crypto/x509"

	"github.com/dflockd-ng/dflockd/session"
)

// Secure tells the lock observatory (session.Identify) whether the
// connection is TLS: a server's connections all are, or none (Config.TLS
// is set once, before Serve).
func (c *conn) Secure() bool { return c.srv.cfg.TLS != nil }

var _ session.SecureTransport = (*conn)(nil)

// PeerCertificate is the client certificate the TLS handshake verified
// (--tls-client-ca), or nil: a policy names the connection's identity
// from it (session/acl.go). The handshake ends before the session opens,
// so the owner goroutine reads it after the handshake's writes.
func (c *conn) PeerCertificate() *x509.Certificate {
	tc, ok := c.nc.(*tls.Conn)
	if !ok {
		return nil
	}
	if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 && len(st.PeerCertificates) > 0 {
		return st.PeerCertificates[0]
	}
	return nil
}

var _ session.CertifiedTransport = (*conn)(nil)
