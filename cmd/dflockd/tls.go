package main

// TLS (spec §D.2): with --tls-cert and --tls-key every client listener —
// the dflockd port and the godistlock port, and the HTTP API's (http.go)
// — speaks TLS only. gnet has no TLS, so the line protocol's listeners are
// served by package netconn (a goroutine transport over net.Conn) instead
// of the gnet loops, over the session hub main builds and runs. Without
// TLS nothing here runs and the gnet loops serve plain TCP (main.go).

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/tlscert"
)

// checkTLS refuses a certificate without its key or a key without its
// certificate, naming the setting that was given (dflockd refuses the
// same). Empty values count as unset.
func checkTLS(cfg *Config, cli, env func(string) (source, bool)) error {
	if cfg.TLSClientCA != "" && cfg.TLSCert == "" {
		return fmt.Errorf("--tls-client-ca (DFLOCKD_TLS_CLIENT_CA) needs TLS: set --tls-cert and --tls-key too")
	}
	if (cfg.TLSCert == "") == (cfg.TLSKey == "") {
		return nil
	}
	given := func(flag, envName string) string {
		if src, ok := cli(flag); ok && src.text != "" {
			return src.name
		}
		return envName
	}
	if cfg.TLSCert != "" {
		return fmt.Errorf("%s is set but --tls-key (%s) is not: TLS needs the certificate and its private key",
			given(flagTLSCert, envTLSCert), envTLSKey)
	}
	return fmt.Errorf("%s is set but --tls-cert (%s) is not: TLS needs the certificate and its private key",
		given(flagTLSKey, envTLSKey), envTLSCert)
}

// loadTLS reads the certificate and key pair, or returns nil without TLS.
// A pair that cannot serve (unreadable, not PEM, a key of another
// certificate) is an error that says which and why.
func loadTLS(cfg Config) (*tlscert.Store, error) {
	if cfg.TLSCert == "" {
		return nil, nil
	}
	st, err := tlscert.Load(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	if cfg.TLSClientCA != "" {
		if err := st.SetClientCAs(cfg.TLSClientCA); err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %w", err)
		}
	}
	return st, nil
}

// certAttrs describe the certificate in use for the log.
func certAttrs(st *tlscert.Store) []any {
	leaf := st.Certificate().Leaf
	if leaf == nil {
		return nil
	}
	return []any{"subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
}

// reloadTLS answers a SIGHUP: the files are read again; a pair that does
// not load leaves the one in use in place.
func reloadTLS(log *slog.Logger, st *tlscert.Store) {
	if st == nil {
		log.Info("SIGHUP: nothing to reload")
		return
	}
	if err := st.Reload(); err != nil {
		log.Error("SIGHUP: TLS certificate not reloaded; the previous one stays in use", "error", err)
		return
	}
	log.Info("SIGHUP: TLS certificate reloaded; new connections use it", certAttrs(st)...)
}

// listenAll binds every address, or none: on error it returns the
// address that failed, before anything says listening.
func listenAll(guard *fdguard.Guard, addrs []string) ([]net.Listener, string, error) {
	var ls []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, a, err
		}
		ls = append(ls, guard.Listener(l))
	}
	return ls, "", nil
}

// tlsServer is the TLS counterpart of loop.Server as main drives it: Serve
// blocks until Shutdown has ended every connection; Shutdown drains
// (spec §D.5) and closes the listeners.
type tlsServer struct {
	srv       *netconn.Server
	listeners []net.Listener     // the dflockd listener, then godistlock's if any
	protos    []session.Protocol // of each listener
	// shutdownTimeout bounds the wait for connections to end; 0 = forever.
	shutdownTimeout time.Duration
	shut            chan struct{} // closed once Shutdown has returned
}

// newTLSServer serves ls — the dflockd listener, then the godistlock one
// if there is one — over TLS with certs, on hub, whose housekeeping its
// owner runs (main: the HTTP API shares the hub). ncfg gives the
// connection caps, the log, the event log and the request counting; the
// handshake gets the read timeout, under which dflockd's lazy handshake
// runs.
func newTLSServer(cfg Config, certs *tlscert.Store, ls []net.Listener, hub *session.Hub, ncfg netconn.Config) *tlsServer {
	ncfg.TLS = certs.Config()
	ncfg.HandshakeTimeout = cfg.ReadTimeout
	ncfg.QuietInterval = cfg.GCInterval // when the gnet loops look, too
	return &tlsServer{
		srv:             netconn.New(hub, ncfg),
		listeners:       ls,
		protos:          []session.Protocol{session.Dflockd, session.Godistlock}[:len(ls)],
		shutdownTimeout: cfg.ShutdownTimeout,
		shut:            make(chan struct{}),
	}
}

// Serve serves every listener until Shutdown. A listener that fails
// otherwise closes the server and its error is returned.
func (s *tlsServer) Serve() error {
	errs := make(chan error, len(s.listeners))
	for i, l := range s.listeners {
		go func() { errs <- s.srv.Serve(l, s.protos[i]) }()
	}
	var failed error
	for range s.listeners {
		if err := <-errs; err != nil && failed == nil {
			failed = err
			_ = s.srv.Close() // the other listeners return too
		}
	}
	if failed != nil {
		return failed
	}
	<-s.shut // the listeners closed for a drain: wait for it to end
	return nil
}

// Connections reports open TLS connections.
func (s *tlsServer) Connections() int { return s.srv.Connections() }

// Shutdown drains: new requests get error_draining and a close (v1:
// connections go on being served), the listeners close, and the
// connections left when the shutdown timeout passes are closed.
func (s *tlsServer) Shutdown(ctx context.Context) error {
	defer close(s.shut)
	if s.shutdownTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.shutdownTimeout)
		defer cancel()
	}
	return s.srv.Shutdown(ctx)
}
