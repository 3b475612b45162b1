// Package tlscert holds a server's TLS certificate and key pair, loaded
// from files and reloadable while the server runs (--tls-cert, --tls-key;
// a SIGHUP reloads them). Every TLS listener of a server — the dflockd
// protocol, HTTP, godistlock — takes its tls.Config from the same Store,
// so one reload reaches them all.
//
// Concurrency: a Store is safe for concurrent use. The certificate in use
// is an atomic pointer: handshakes read it without a lock, and a Reload
// swaps it whole, so a handshake sees the old pair or the new one, never
// a mix. Established connections keep the certificate they handshook
// with.
//
// The package checks the pair it is given; which flags must come
// together (both files or neither) is its caller's business.
package tlscert

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// Errors a load can fail with, besides the file system's (wrapped, with
// the file's name).
var (
	ErrNoCertificate = errors.New("tlscert: no PEM CERTIFICATE block in the certificate file")
	ErrNoKey         = errors.New("tlscert: no PEM PRIVATE KEY block in the key file")
	ErrKeyMismatch   = errors.New("tlscert: the private key does not match the certificate")
)

// Store is a certificate and key pair read from two files.
type Store struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
	// reload serialises Reload: two concurrent reloads must not store
	// their results in the opposite order of their reads.
	reload sync.Mutex
	// clientCAs, when set (SetClientCAs, before any Config), verifies the
	// client certificates handshakes present (--tls-client-ca).
	clientCAs *x509.CertPool
}

// ErrNoClientCA: the client CA file holds no certificate.
var ErrNoClientCA = errors.New("tlscert: no PEM CERTIFICATE block in the client CA file")

// SetClientCAs reads the CA certificates that sign client certificates
// (PEM, one or more): every Config made after it asks clients for a
// certificate and verifies the one given; a client may still present
// none (it then authenticates with a token, if the server wants one).
func (s *Store) SetClientCAs(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("tlscert: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if !isCertBlock(b.Type) {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return fmt.Errorf("tlscert: client CA %s: certificate %d: %w", file, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return fmt.Errorf("%w: %s", ErrNoClientCA, file)
	}
	s.clientCAs = pool
	return nil
}

// Load reads the pair from certFile (PEM, the leaf first, then any
// intermediates) and keyFile (PEM).
func Load(certFile, keyFile string) (*Store, error) {
	cert, err := readPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	s := &Store{certFile: certFile, keyFile: keyFile}
	s.cur.Store(cert)
	return s, nil
}

// Reload reads the files again and, if they hold a valid pair, serves it
// to every handshake from now on. On failure the certificate in use stays
// (a file caught half-written by a SIGHUP never takes TLS down) and the
// error says why.
func (s *Store) Reload() error {
	s.reload.Lock()
	defer s.reload.Unlock()
	cert, err := readPair(s.certFile, s.keyFile)
	if err != nil {
		return err
	}
	s.cur.Store(cert)
	return nil
}

// Certificate returns the pair in use; its Leaf is parsed (e.g. for
// logging its expiry). The caller must not modify it.
func (s *Store) Certificate() *tls.Certificate { return s.cur.Load() }

// Config returns a new server tls.Config for a listener: TLS 1.2 at
// least (as dflockd), the certificate read at each handshake from the
// Store. The config is the caller's (an HTTP server may add NextProtos);
// it shares nothing with other listeners' but the Store.
func (s *Store) Config() *tls.Config {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cur.Load(), nil
		},
	}
	if s.clientCAs != nil {
		cfg.ClientCAs, cfg.ClientAuth = s.clientCAs, tls.VerifyClientCertIfGiven
	}
	return cfg
}

// readPair reads and checks the two files, with errors that name the file
// and what is wrong with it.
func readPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("tlscert: certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("tlscert: key: %w", err)
	}
	if firstBlock(certPEM, isCertBlock) == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoCertificate, certFile)
	}
	if firstBlock(keyPEM, isKeyBlock) == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoKey, keyFile)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		if mismatched(certPEM, keyPEM) {
			return nil, fmt.Errorf("%w: %s, %s", ErrKeyMismatch, certFile, keyFile)
		}
		return nil, fmt.Errorf("tlscert: %s, %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// firstBlock returns the bytes of the first PEM block in data whose type
// is wanted, or nil.
func firstBlock(data []byte, want func(string) bool) []byte {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil
		}
		if want(b.Type) {
			return b.Bytes
		}
	}
}

func isCertBlock(t string) bool { return t == "CERTIFICATE" }

// isKeyBlock: PKCS #8 ("PRIVATE KEY") or a legacy "RSA/EC PRIVATE KEY".
func isKeyBlock(t string) bool { return t == "PRIVATE KEY" || strings.HasSuffix(t, " PRIVATE KEY") }

// mismatched reports whether both files parse but the key is not the
// certificate's: tls.X509KeyPair's error says so only in its text.
func mismatched(certPEM, keyPEM []byte) bool {
	leaf, err := x509.ParseCertificate(firstBlock(certPEM, isCertBlock))
	if err != nil {
		return false
	}
	key := parseKey(firstBlock(keyPEM, isKeyBlock))
	if key == nil {
		return false
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && !pub.Equal(key.Public())
}

// parseKey parses a private key in any of the encodings tls.X509KeyPair
// accepts; nil if none fits.
func parseKey(der []byte) crypto.Signer {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		s, _ := k.(crypto.Signer) // RSA, ECDSA, Ed25519 and ECDH keys; only ECDH is not one
		return s
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k
	}
	return nil
}
