package main

// The HTTP API (spec §F.2): with --http-port the server also serves
// package httpapi, on a listener of its own, over the hub the TCP (or TLS)
// clients are served by: an HTTP session is an engine session with a
// connection id from the same space, queued in the same FIFOs. /metrics
// (package metrics) is served there, as in dflockd v2. With --tls-cert the
// HTTP listener speaks HTTPS with the same certificate store, so one
// SIGHUP reloads both. On a cluster member it is served over the
// member's cluster hub (http_cluster.go). /metrics takes a scrapers' token
// of its own, or none by choice (metricsauth.go); 401s are logged, and
// every request with --http-access-log.

import (
	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/vocab"

	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/httpapi"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/metrics"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/tlscert"
	"github.com/dflockd-ng/dflockd/version"
)

// HTTPConfig is the HTTP API part of the configuration (spec §E.2, the
// --http-* flags, with dflockd v2's defaults).
type HTTPConfig struct {
	Port int    // --http-port, DFLOCKD_HTTP_PORT: 0 = no HTTP API, else 1..65535
	Host string // --http-host, DFLOCKD_HTTP_HOST: "" = Config.Host
	// SessionIdleTimeout: --http-session-idle-timeout,
	// DFLOCKD_HTTP_SESSION_IDLE_S, 20 s, >= 0 (0 = httpapi's default, 20 s).
	SessionIdleTimeout time.Duration
	// SSEPingInterval: --http-sse-ping-interval, DFLOCKD_HTTP_SSE_PING_S,
	// 15 s: the keep-alive comment period of the SSE streams; 0 = none.
	SSEPingInterval time.Duration
	// BodyTimeout: --http-body-timeout, DFLOCKD_HTTP_BODY_TIMEOUT_S, 10 s,
	// >= 1 s: how long after its headers a request's body must be whole.
	BodyTimeout      time.Duration
	MaxSessions      int // --http-max-sessions, 0 = no cap
	MaxSessionsPerIP int // --http-max-sessions-per-ip, 0 = no cap
	MaxConnsPerIP    int // --http-max-connections-per-ip, 0 = no cap
	MaxStreamsPerIP  int // --http-max-streams-per-ip, 8, 0 = no cap
	RateLimitPerIP   int // --http-rate-limit-per-ip: requests a second, 0 = no limit
	RateLimitBurst   int // --http-rate-limit-burst, 0 = the rate
	// CORSAllowedOrigins: --http-cors-allowed-origins, comma-separated,
	// "*" = any, "" = no CORS. Kept as written so that Config stays
	// comparable; corsOrigins splits it.
	CORSAllowedOrigins string
	// AccessLog: --http-access-log, DFLOCKD_HTTP_ACCESS_LOG: one log
	// line per request.
	AccessLog bool
	// MetricsToken: --metrics-token, or the content of MetricsTokenFile
	// (--metrics-token-file): a bearer token good for /metrics only
	// (metricsauth.go). MetricsAuth: --metrics-auth, "token" or "none";
	// "" (unset) is "token".
	MetricsToken     string
	MetricsTokenFile string
	MetricsAuth      string
	// ObservatoryEvents: --observatory-events, DFLOCKD_OBSERVATORY_EVENTS:
	// the lock observatory's event ring (engine.Config.Events); 0 = off.
	// Recorded only with the HTTP API, the only way to read it.
	ObservatoryEvents int
}

// checkHTTP refuses what cannot be served: the HTTP API on a port another
// listener of this server takes (dflockd v2 refuses --http-port equal to
// --port as well).
func checkHTTP(cfg *Config) error {
	h := &cfg.HTTP
	if h.Port == 0 {
		return nil
	}
	var errs []error
	if h.Port == cfg.Port {
		errs = append(errs, errors.New("--http-port (DFLOCKD_HTTP_PORT) must differ from --port (DFLOCKD_PORT)"))
	}
	if h.Port == cfg.GodistlockPort {
		errs = append(errs, errors.New("--http-port (DFLOCKD_HTTP_PORT) must differ from --godistlock-port (DFLOCKD_GODISTLOCK_PORT)"))
	}
	return errors.Join(errs...)
}

// httpAddr is the address the HTTP API listens on.
func httpAddr(cfg Config) string {
	host := cfg.HTTP.Host
	if host == "" {
		host = cfg.Host
	}
	return net.JoinHostPort(host, strconv.Itoa(cfg.HTTP.Port))
}

// corsOrigins splits --http-cors-allowed-origins: comma-separated, white
// space around each origin and empty items dropped, as dflockd does.
func corsOrigins(list string) []string {
	var out []string
	for _, o := range strings.Split(list, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

// httpSources is what the HTTP API serves besides the hub's sessions and
// locks: the stats document, the metrics' sources, the TLS certificate.
type httpSources struct {
	hub *session.Hub
	// member, in cluster mode, is the cluster member (hub is then nil:
	// its hub is the member's).
	member  *clusterServer
	profile vocab.Profile
	fences  *fence.Allocator
	certs   *tlscert.Store // nil: plain HTTP
	// transport names the line protocol's transport in the metrics
	// ("tcp" or "tls") and conns counts its connections.
	transport string
	conns     func() int
	start     time.Time
	logf      func(format string, args ...any)
	guard     *fdguard.Guard // the listeners' descriptor guard
	// log is the server's log (the access log's lines), events its
	// rate-limited log of client incidents (401s).
	log    *slog.Logger
	events *ratelog.Logger
}

// tlsNotAfter reads the expiry of each certificate the server presents,
// for dflockd_tls_certificate_expiry_timestamp_seconds: --tls-cert's at
// each scrape (a SIGHUP may have replaced it), --raft-tls-cert's as read
// at startup.
func tlsNotAfter(src httpSources) map[string]func() time.Time {
	certs := map[string]func() time.Time{}
	if st := src.certs; st != nil {
		certs["tls-cert"] = func() time.Time {
			if leaf := st.Certificate().Leaf; leaf != nil {
				return leaf.NotAfter
			}
			return time.Time{}
		}
	}
	if src.member != nil && !src.member.raftCertNotAfter.IsZero() {
		notAfter := src.member.raftCertNotAfter
		certs["raft-tls-cert"] = func() time.Time { return notAfter }
	}
	return certs
}

// newHTTPAPI builds the HTTP API of cfg over src.hub, with /metrics over
// the whole server.
func newHTTPAPI(cfg Config, src httpSources) *httpapi.API {
	var api *httpapi.API
	var eng *engine.Engine // nil: the hub's at each scrape, a cluster replica's
	var rm func() metrics.Raft
	var re *metrics.RaftEvents
	if src.member != nil {
		// The replica's fences are the log's, not the local allocator's.
		src.hub, rm, src.fences = src.member.hub, raftMetrics(src.member.node), nil
		re = src.member.raftEvents
	} else {
		eng = src.hub.Engine()
	}
	reg := metrics.NewRegistry(metrics.Sources{
		Engine:     eng,
		Raft:       rm,
		RaftEvents: re,
		Build:      metrics.Build{Version: version.String(), Revision: version.Revision(), Profile: cfg.Compat},
		Hub:        src.hub,
		Fences:     src.fences,
		Transports: map[string]func() int{
			src.transport: src.conns,
			// api is set below, before anything serves a scrape.
			"http": func() int { return api.Sessions() },
		},
		Ready:       func() bool { return !src.hub.Draining() && src.hub.HasLeader() },
		Start:       src.start,
		FDExhausted: src.guard.Exhausted,
		FDRefused:   src.guard.Refused,
		TLSNotAfter: tlsNotAfter(src),
	})
	acfg := httpapi.Config{
		AuthToken:           cfg.AuthToken,
		MetricsToken:        cfg.HTTP.MetricsToken,
		MetricsOpen:         cfg.HTTP.MetricsAuth == metricsAuthNone,
		SessionIdleTimeout:  cfg.HTTP.SessionIdleTimeout,
		SSEPingInterval:     cfg.HTTP.SSEPingInterval,
		BodyReadTimeout:     cfg.HTTP.BodyTimeout,
		NoSSEPing:           cfg.HTTP.SSEPingInterval == 0,
		MaxSessions:         cfg.HTTP.MaxSessions,
		MaxSessionsPerIP:    cfg.HTTP.MaxSessionsPerIP,
		MaxConnectionsPerIP: cfg.HTTP.MaxConnsPerIP,
		MaxStreamsPerIP:     streamsPerIP(cfg.HTTP.MaxStreamsPerIP),
		RateLimitPerIP:      float64(cfg.HTTP.RateLimitPerIP),
		RateLimitBurst:      cfg.HTTP.RateLimitBurst,
		CORSAllowedOrigins:  corsOrigins(cfg.HTTP.CORSAllowedOrigins),
		Stats:               statsDocument(src.hub, src.profile),
		Metrics:             promhttp.HandlerFor(reg, promhttp.HandlerOpts{}),
		Registerer:          reg,
		Logf:                src.logf,
		Log:                 src.log,
		Events:              src.events,
	}
	if cfg.HTTP.AccessLog {
		acfg.AccessLog = src.log
	}
	if src.certs != nil {
		acfg.TLS = src.certs.Config()
	}
	// The admin token guards the observatory's force release on any
	// server, and a cluster's membership routes.
	acfg.AdminToken = cfg.Cluster.AdminToken
	if src.member != nil {
		acfg.Cluster = src.member.node
	}
	api = httpapi.New(src.hub, acfg)
	return api
}

// streamsPerIP is --http-max-streams-per-ip as httpapi takes it: there 0
// is its default, and no cap is negative.
func streamsPerIP(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// statsDocument returns GET /v1/stats: the document the line protocol's
// stats command answers after "ok " (session's appendStats), in the
// server's profile: the five keys of v1 and v2, every array under rf,
// and on a cluster member its "cluster" object.
func statsDocument(hub *session.Hub, profile vocab.Profile) func() []byte {
	return func() []byte {
		return parse.AppendStats(nil, hub.Stats(profile == vocab.ProfileRF), profile)
	}
}

// shutdownContext bounds a shutdown step by --shutdown-timeout (0 =
// unbounded).
func shutdownContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), timeout)
}

// observatoryEvents is the engine's event ring: only a server that
// serves the HTTP API records events, since nothing else reads them.
func observatoryEvents(cfg Config) int {
	if cfg.HTTP.Port == 0 {
		return 0
	}
	return cfg.HTTP.ObservatoryEvents
}
