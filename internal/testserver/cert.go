package testserver

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// Cert is a certificate for 127.0.0.1, valid for an hour, for TLS tests:
// a leaf signed by a CA of its own (tlscert/certtest).
type Cert struct {
	TLS     tls.Certificate // for a listener
	Pool    *x509.CertPool  // trusts its CA, for a client
	CertPEM []byte          // the certificate, PEM-encoded, for files
	KeyPEM  []byte          // its private key, PEM-encoded
	CAPEM   []byte          // the CA's certificate, PEM-encoded, for a client's CA file
}

// NewCert makes a Cert.
func NewCert(t testing.TB) Cert {
	t.Helper()
	ca := certtest.NewCA(t, "dflockd test CA")
	leaf := ca.Leaf(t, "dflockd test")
	return Cert{TLS: leaf.TLS, Pool: ca.Pool, CertPEM: leaf.CertPEM, KeyPEM: leaf.KeyPEM, CAPEM: ca.PEM()}
}
