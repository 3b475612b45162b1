package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Config tunes an API; the zero value of each field means its default
// (spec §E.2's --http-* flags).
type Config struct {
	// AuthToken, if set, is required as "Authorization: Bearer <token>"
	// on every route but /health, /ready and /v1/openapi.json.
	AuthToken string
	// MetricsToken, if set, is a bearer token accepted on GET /metrics
	// only: a scraper's credential, which opens nothing else. AuthToken
	// is accepted there too. Without either, /metrics is open.
	MetricsToken string
	// MetricsOpen serves /metrics without a token even with AuthToken
	// set, for scrapers that hold none (MetricsToken is then unused).
	MetricsOpen bool
	// SessionIdleTimeout is advertised to clients (idle_timeout_s);
	// sessions idle for twice as long are closed. Default 20 s.
	SessionIdleTimeout time.Duration
	// SSEPingInterval is the period of the keep-alive comment lines of the
	// SSE streams (/v1/events, /v1/signals), so that proxies do not close
	// a quiet one (--http-sse-ping-interval); default 15 s. NoSSEPing
	// sends none.
	SSEPingInterval time.Duration
	NoSSEPing       bool
	// MaxSessions and MaxSessionsPerIP cap open sessions, in all and per
	// client IP address; MaxConnectionsPerIP caps HTTP connections per
	// client IP address (Serve closes the others as they are accepted).
	// 0 = no cap.
	MaxSessions, MaxSessionsPerIP, MaxConnectionsPerIP int
	// MaxStreamsPerIP caps the SSE streams of one client IP address on
	// each stream route (/v1/events, /v1/signals; each admits 64 in all):
	// 0 = 8, < 0 = no cap but the route's (streams.go).
	MaxStreamsPerIP int
	// BodyReadTimeout bounds the reading of a request's body, from its
	// headers on (--http-body-timeout); default 10 s. A body not whole by
	// then fails the request, and its connection closes (body.go).
	BodyReadTimeout time.Duration
	// RateLimitPerIP is the requests a second each client IP address may
	// make (a token bucket; 0 = no limit), RateLimitBurst the bucket's
	// size (0 = the rate, rounded up). /health and /ready are exempt.
	RateLimitPerIP float64
	RateLimitBurst int
	// CORSAllowedOrigins are the origins browsers may call from ("*" =
	// any); empty = no CORS headers and no preflight answers.
	CORSAllowedOrigins []string
	// Stats returns the stats document (spec §F.1) for GET /v1/stats,
	// the same as the TCP stats command's (the server's --compat); the
	// slice is the API's. nil serves the engine's lock stats in the v2
	// shape.
	Stats func() []byte
	// Metrics serves GET /metrics; nil answers 404.
	Metrics http.Handler
	// Registerer, if set, gets the HTTP side's metrics (metrics.go).
	Registerer prometheus.Registerer
	// TLS, if set, serves HTTPS on every listener Serve is given (the
	// TCP protocol's --tls-cert and --tls-key, as in dflockd: one
	// certificate for both). Connections over MaxConnectionsPerIP are
	// refused before their handshake.
	TLS *tls.Config
	// Logf logs what an operator should see (internal errors, the HTTP
	// server's own complaints); nil discards.
	Logf func(format string, args ...any)
	// Events, if set, logs every 401 with the client's address, the
	// method and the path (never a token), within its rate limit, as the
	// line protocol's failed auths are logged.
	Events *ratelog.Logger
	// Log, if set, gets the operator's events with their data as
	// attributes (a deadlock found, a force release); nil: they go to
	// Logf as text.
	Log *slog.Logger
	// AccessLog, if set, gets one line per request once it is answered:
	// method, path, status, bytes, duration, remote (observe.go).
	AccessLog *slog.Logger
	// Cluster, on a cluster member (whose hub is a cluster hub), serves
	// GET /v1/readindex and the admin routes (cluster.go); nil: they
	// answer 404.
	Cluster Cluster
	// AdminToken is the X-Dflockd-Admin token of the admin routes
	// (--admin-token); "" answers them 503 admin_disabled.
	AdminToken string
}

// Defaults and fixed bounds.
const (
	defaultIdleTimeout = 20 * time.Second // --http-session-idle-timeout
	// authFailDelay is how long a request with a wrong or missing token
	// waits for its 401 (dflockd v2): it slows guessing down.
	authFailDelay = 100 // ms
	// readHeaderTimeout bounds a client that sends its headers slowly.
	// There is no whole-request timeout: an acquire may rightly wait
	// for as long as its acquire_timeout_s.
	readHeaderTimeout = 10 * time.Second
	// idleConnTimeout closes keep-alive connections nobody uses.
	idleConnTimeout = 120 * time.Second
)

// API is the HTTP API over one hub. It is an http.Handler; Serve and
// Shutdown run it on listeners of its own.
type API struct {
	hub      *session.Hub
	cfg      Config
	clock    timerwheel.Clock
	idleMs   int64 // sessions idle for this long are closed (2 × the timeout)
	tokenSum [sha256.Size]byte
	adminSum [sha256.Size]byte // of Config.AdminToken
	// metricsSum is Config.MetricsToken's (auth.go).
	metricsSum [sha256.Size]byte
	// hold holds a request over its identity's rate for d, or until its
	// client leaves (false): holdFor, or a test's.
	hold func(ctx context.Context, d time.Duration) bool

	mux      *http.ServeMux
	handler  http.Handler
	sessions sessionTable
	timers   *timers
	limiter  *rateLimiter     // nil: no rate limit
	cors     *corsPolicy      // nil: no CORS
	conns    *conncap.Limiter // HTTP connections per client IP
	metrics  *httpMetrics     // nil: no Registerer
	// The lock observatory's event stream and deadlock monitor
	// (eventstream.go, deadlocks.go).
	events    *eventStream
	deadlocks *deadlockMonitor
	// The open streams of GET /v1/events and GET /v1/signals
	// (streams.go); streamsPerIP is their per-address cap (0: none).
	eventSlots, signalSlots streamSlots
	streamsPerIP            int
	srv                     struct {
		sync.Mutex
		s *http.Server
	}
	// stopped is set, and stop closed, by the first Shutdown: a request
	// waiting for its 401 then answers at once.
	stopped atomic.Bool
	stop    chan struct{}
}

// New returns the API of hub; its timer driver runs until Shutdown.
func New(hub *session.Hub, cfg Config) *API {
	if cfg.SessionIdleTimeout <= 0 {
		cfg.SessionIdleTimeout = defaultIdleTimeout
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = defaultBodyReadTimeout
	}
	if cfg.MaxStreamsPerIP == 0 {
		cfg.MaxStreamsPerIP = defaultMaxStreamsPerIP
	}
	if cfg.SSEPingInterval <= 0 {
		cfg.SSEPingInterval = defaultSSEPing
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	a := &API{
		hub:    hub,
		cfg:    cfg,
		clock:  hub.Clock(),
		idleMs: 2 * cfg.SessionIdleTimeout.Milliseconds(),
		conns:  &conncap.Limiter{PerIP: cfg.MaxConnectionsPerIP},
		stop:   make(chan struct{}),
		hold:   holdFor,
	}
	a.sessions.init()
	a.streamsPerIP = max(cfg.MaxStreamsPerIP, 0)
	a.eventSlots.perIP, a.signalSlots.perIP = a.streamsPerIP, a.streamsPerIP
	if cfg.AuthToken != "" {
		a.tokenSum = sha256.Sum256([]byte(cfg.AuthToken))
	}
	if cfg.AdminToken != "" {
		a.adminSum = sha256.Sum256([]byte(cfg.AdminToken))
	}
	if cfg.MetricsToken != "" {
		a.metricsSum = sha256.Sum256([]byte(cfg.MetricsToken))
	}
	a.timers = newTimers(a.clock, a.fire)
	a.events, a.deadlocks = newEventStream(a), newDeadlockMonitor(a, cfg.Registerer)
	if cfg.RateLimitPerIP > 0 {
		a.limiter = newRateLimiter(cfg.RateLimitPerIP, cfg.RateLimitBurst)
	}
	if len(cfg.CORSAllowedOrigins) > 0 {
		a.cors = newCORSPolicy(cfg.CORSAllowedOrigins)
	}
	a.mux = a.routes()
	a.handler = a.withAuth(a.mux)
	a.handler = a.withRateLimit(a.handler)
	a.handler = a.withCORS(a.handler)
	if cfg.Registerer != nil {
		a.metrics = newHTTPMetrics(cfg.Registerer, a)
	}
	if a.metrics != nil || cfg.AccessLog != nil {
		a.handler = a.withObservation(a.handler)
	}
	a.handler = a.withBodyDeadline(a.handler) // first: whatever answers, the body is bounded
	a.timers.driver.Start()
	return a
}

// ServeHTTP serves one request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// Sessions reports the open HTTP sessions.
func (a *API) Sessions() int { return a.sessions.count() }

// The lock and semaphore routes and the request each one makes.
var lockRoutes = []struct {
	pattern string
	op      vocab.Op
}{
	{"POST /v1/locks/{key}", vocab.OpLock},
	{"POST /v1/locks/{key}/release", vocab.OpRelease},
	{"POST /v1/locks/{key}/renew", vocab.OpRenew},
	{"POST /v1/locks/{key}/enqueue", vocab.OpEnqueue},
	{"POST /v1/locks/{key}/wait", vocab.OpWait},
	{"POST /v1/semaphores/{key}", vocab.OpSemLock},
	{"POST /v1/semaphores/{key}/release", vocab.OpSemRelease},
	{"POST /v1/semaphores/{key}/renew", vocab.OpSemRenew},
	{"POST /v1/semaphores/{key}/enqueue", vocab.OpSemEnqueue},
	{"POST /v1/semaphores/{key}/wait", vocab.OpSemWait},
}

// routes builds the mux: Go's method and path patterns; "/" catches the
// rest to answer 404 or 405 in JSON.
func (a *API) routes() *http.ServeMux {
	mux := http.NewServeMux()
	for _, rt := range a.routeTable() {
		mux.HandleFunc(rt.pattern, a.guard(rt.pattern, rt.handler))
	}
	mux.HandleFunc("/", a.unrouted)
	return mux
}

// route is one pattern of the mux and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// routeTable is every route of the API; the tests check that the OpenAPI
// document describes exactly these. Sessions and lock calls are a
// cluster leader's (leaderOnly); the cluster routes answer 404 on a
// single node (cluster.go).
func (a *API) routeTable() []route {
	rts := []route{
		{"POST /v1/sessions", a.leaderOnly(a.createSession)},
		{"DELETE /v1/sessions/{id}", a.leaderOnly(a.deleteSession)},
		{"POST /v1/sessions/{id}/ping", a.leaderOnly(a.pingSession)},
		{"GET /v1/stats", a.stats},
		{"GET /v1/signals", a.leaderOnly(a.streamSignals)},
		{"POST /v1/signals/{channel}", a.leaderOnly(a.postSignal)},
		{"GET /v1/openapi.json", serveOpenAPI},
		{"GET /health", health},
		{"GET /ready", a.ready},
		{"GET /metrics", a.serveMetrics},
		{"GET /v1/readindex", a.readIndex},
		{"POST /v1/admin/voters", a.addVoter},
		{"DELETE /v1/admin/voters/{id}", a.removeVoter},
		{"GET /v1/admin/snapshot", a.saveSnapshot},
		{"GET /v1/acl/log", a.aclLog},
		{"GET /v1/acl/whoami", a.aclWhoami},
		{"GET /v1/acl/check", a.aclCheck},
	}
	for _, lr := range lockRoutes {
		op := lr.op
		rts = append(rts, route{lr.pattern, a.leaderOnly(func(w http.ResponseWriter, r *http.Request) { a.lockCall(w, r, op) })})
	}
	return append(rts, a.observatoryRoutes()...)
}

// unrouted answers requests no route takes: 405 with the methods the path
// has, or 404.
func (a *API) unrouted(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, p := a.mux.Handler(probe); p != "" && p != "/" {
			allow = append(allow, m)
			if m == http.MethodGet {
				allow = append(allow, http.MethodHead)
			}
		}
	}
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, codeNotFound, "no such route")
		return
	}
	if a.cors != nil {
		allow = append(allow, http.MethodOptions)
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, "")
}

// Serve serves the API on l until Shutdown, and then returns nil. With
// MaxConnectionsPerIP set, a connection over the cap is closed as soon as
// it is accepted, before net/http spends a goroutine or a read on it
// (listener.go), and before a TLS handshake. Serve may be called for
// several listeners; Serve after Shutdown returns nil at once.
func (a *API) Serve(l net.Listener) error {
	if a.cfg.MaxConnectionsPerIP > 0 {
		l = &capListener{Listener: l, caps: a.conns}
	}
	if a.cfg.TLS != nil {
		l = tls.NewListener(l, a.cfg.TLS)
	}
	err := a.server().Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (a *API) server() *http.Server {
	a.srv.Lock()
	defer a.srv.Unlock()
	if a.srv.s == nil {
		a.srv.s = a.newServer()
	}
	return a.srv.s
}

func (a *API) newServer() *http.Server {
	return &http.Server{
		Handler:           a,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleConnTimeout,
		// The streams' peer probes reach the socket through it (streams.go).
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ErrorLog:    log.New(logfWriter(a.cfg.Logf), "httpapi: ", 0),
	}
}

// Shutdown stops the API: new sessions answer 503 draining, every
// session is closed (its calls still waiting answer 410, its holds are
// released as on a disconnect), the listeners close, and Shutdown waits
// for the requests in progress to finish; if ctx ends first, it closes
// their connections and returns ctx's error. A server shutting down
// calls Hub.Drain first, so that waits end with 503 draining and /ready
// reports it while the other listeners drain.
func (a *API) Shutdown(ctx context.Context) error {
	first := a.stopped.CompareAndSwap(false, true)
	if first {
		close(a.stop)
	}
	all := a.sessions.closeAll()
	for _, s := range all {
		// Every call wakes before any session closes: a lock one closing
		// session hands to another then reaches a call that is ending,
		// which gives it back, and is not answered as a grant.
		s.markGone()
	}
	for _, s := range all {
		a.closeSession(s)
	}
	var err error
	a.srv.Lock()
	if a.srv.s == nil {
		// No Serve yet: make the server now, so that a Serve after
		// Shutdown finds it closed and returns at once.
		a.srv.s = a.newServer()
	}
	srv := a.srv.s
	a.srv.Unlock()
	if err = srv.Shutdown(ctx); err != nil {
		srv.Close()
	}
	if first {
		a.timers.driver.Stop()
	}
	return err
}

// draining reports whether new work is refused: the hub drains or the API
// shuts down.
func (a *API) draining() bool { return a.hub.Draining() || a.sessions.isClosed() }

// health is GET /health: the process answers.
func health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, statusReply{Status: vocab.StatusOK.String()})
}

// ready is GET /ready: 503 once a drain has started, and on a cluster
// member that knows of no leader: every request there would fail with
// error_not_leader and no address to go to, so a load balancer must send
// its traffic elsewhere. A follower that knows its leader serves
// (redirects, or forwards with --cluster-forward).
func (a *API) ready(w http.ResponseWriter, _ *http.Request) {
	if a.draining() {
		writeJSON(w, http.StatusServiceUnavailable, statusReply{Status: "draining"})
		return
	}
	if !a.hub.HasLeader() {
		writeJSON(w, http.StatusServiceUnavailable, statusReply{Status: "no_leader"})
		return
	}
	writeJSON(w, http.StatusOK, statusReply{Status: vocab.StatusOK.String()})
}

// stats is GET /v1/stats.
func (a *API) stats(w http.ResponseWriter, r *http.Request) {
	var doc []byte
	if sc := observeScope(r); sc != nil {
		doc = a.scopedStats(sc)
	} else if a.cfg.Stats != nil {
		doc = a.cfg.Stats()
	} else {
		doc = parse.AppendStats(nil, a.hub.Stats(false), vocab.ProfileV2)
	}
	if len(doc) > 0 && doc[len(doc)-1] != '\n' {
		doc = append(doc, '\n') // as every JSON reply here ends
	}
	writeRawJSON(w, http.StatusOK, doc)
}

// serveMetrics is GET /metrics, the caller's handler.
func (a *API) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Metrics == nil {
		writeError(w, http.StatusNotFound, codeNotFound, "metrics are not served here")
		return
	}
	a.cfg.Metrics.ServeHTTP(w, r)
}

// fire runs a fired timer node, on the timer driver's goroutine.
func (a *API) fire(n *timerwheel.Node) {
	switch n.Kind {
	case kindSession:
		a.expire(sessionOf(n))
	case kindAlarm:
		close(alarmOf(n).ring)
	case kindSweep:
		l := limiterOf(n)
		if l.sweep(time.Now()) {
			a.timers.Reset(n, a.clock.Now().After(limiterSweepMs))
		}
	}
}

// logfWriter adapts Logf to the log.Logger net/http writes its errors to.
type logfWriter func(format string, args ...any)

func (f logfWriter) Write(p []byte) (int, error) {
	f("%s", p)
	return len(p), nil
}

var _ session.Endpoint = (*httpSession)(nil)
