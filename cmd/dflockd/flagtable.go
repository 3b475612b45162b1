package main

// The flag table: every flag of the dflockd binary with its environment
// variable, default and bounds, in --help order. LoadConfig (config.go)
// parses with it, writeUsage (usage.go) prints it and fillCompletion
// (completion.go) writes the shell completion from it, so the three
// cannot drift apart.

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Bounds of the values; each has a reason.
const (
	// maxSeconds is the largest whole number of seconds a time.Duration can
	// hold (9223372036); larger values would overflow (spec §E.1, V2 rejects).
	maxSeconds = math.MaxInt64 / int64(time.Second)
	// maxPort is the largest TCP port.
	maxPort = 65535
	// maxLoops bounds --loops: each loop is an OS thread with its own epoll
	// instance, so anything larger is a typo, not tuning.
	maxLoops = 4096
	// maxInt is the largest int on this platform.
	maxInt = math.MaxInt
	// maxObservatoryEvents bounds the event ring at 1.25 GiB: more is a
	// typo, not a timeline anyone reads.
	maxObservatoryEvents = 1 << 24
)

// valueKind says how a setting's text is parsed.
type valueKind uint8

const (
	kindString  valueKind = iota
	kindInt               // integer in [min, max]
	kindSeconds           // integer seconds in [min, max] → time.Duration
	kindBool
	kindCompat // compatibility profile name
	// kindManual settings are registered and documented through the table
	// but resolved by dedicated code (auth token, --no-…, --help, --version).
	kindManual
	kindManualBool
)

// setting is one supported flag with its environment variable.
type setting struct {
	flag   string // without dashes
	env    string // "" = flag only
	oldEnv string // deprecated alias of env, accepted with a warning (spec §I.11)
	kind   valueKind
	min    int64 // bounds of kindInt and kindSeconds
	max    int64
	arg    string // placeholder in --help
	// choices, for a kindString setting, are its only values (any case).
	choices []string
	def     string              // --help default when it cannot be derived from field
	usage   string              // --help description
	field   func(c *Config) any // pointer to the Config field; nil for manual settings
}

// settingGroup is a titled group of settings, in --help order.
type settingGroup struct {
	title    string
	settings []setting
}

// Names of the settings resolved by dedicated code.
const (
	flagAuthToken     = "auth-token"
	flagAuthTokenFile = "auth-token-file"
	envAuthToken      = "DFLOCKD_AUTH_TOKEN"
	envAuthTokenFile  = "DFLOCKD_AUTH_TOKEN_FILE"
	flagAutoRelease   = "auto-release-on-disconnect"
	flagNoAutoRelease = "no-auto-release-on-disconnect"
	flagTLSCert       = "tls-cert"
	flagTLSKey        = "tls-key"
	envTLSCert        = "DFLOCKD_TLS_CERT"
	envTLSKey         = "DFLOCKD_TLS_KEY"
	flagHelp          = "help"
	flagHelpShort     = "h"
	flagVersion       = "version"
)

var settingGroups = []settingGroup{
	{"Listener", []setting{
		{flag: "host", env: "DFLOCKD_HOST", kind: kindString, arg: "ADDR",
			usage: "address to listen on (empty = all interfaces)",
			field: func(c *Config) any { return &c.Host }},
		{flag: "port", env: "DFLOCKD_PORT", kind: kindInt, min: 0, max: maxPort, arg: "PORT",
			usage: "TCP port, 0..65535",
			field: func(c *Config) any { return &c.Port }},
		{flag: "godistlock-port", env: "DFLOCKD_GODISTLOCK_PORT", kind: kindInt, min: 0, max: maxPort, arg: "PORT",
			usage: "also serve godistlock clients on this TCP port, 0..65535 (0 = off)",
			field: func(c *Config) any { return &c.GodistlockPort }},
		{flag: flagTLSCert, env: envTLSCert, kind: kindString, arg: "FILE",
			usage: "serve TLS only, with this certificate (PEM, leaf first); needs --tls-key; SIGHUP reloads both",
			field: func(c *Config) any { return &c.TLSCert }},
		{flag: flagTLSKey, env: envTLSKey, kind: kindString, arg: "FILE",
			usage: "the certificate's private key (PEM); needs --tls-cert",
			field: func(c *Config) any { return &c.TLSKey }},
		{flag: "tls-client-ca", env: "DFLOCKD_TLS_CLIENT_CA", kind: kindString, arg: "FILE",
			usage: "verify client certificates against these CAs (PEM); with --policy-file a certificate names its identity; needs --tls-cert",
			field: func(c *Config) any { return &c.TLSClientCA }},
	}},
	{"Leases and timeouts (whole seconds)", []setting{
		{flag: "default-lease-ttl", env: "DFLOCKD_DEFAULT_LEASE_TTL_S", kind: kindSeconds, min: 1, max: maxSeconds, arg: "SECONDS",
			usage: "lease of a grant whose request names none, > 0",
			field: func(c *Config) any { return &c.DefaultLeaseTTL }},
		{flag: "lease-sweep-interval", env: "DFLOCKD_LEASE_SWEEP_INTERVAL_S", kind: kindSeconds, min: 1, max: maxSeconds, arg: "SECONDS",
			usage: "accepted for compatibility, > 0; leases expire exactly on time",
			field: func(c *Config) any { return &c.LeaseSweepInterval }},
		{flag: "gc-interval", env: "DFLOCKD_GC_INTERVAL_S", oldEnv: "DFLOCKD_GC_LOOP_SLEEP", kind: kindSeconds, min: 1, max: maxSeconds, arg: "SECONDS",
			usage: "how often idle keys are pruned, > 0 (old env name DFLOCKD_GC_LOOP_SLEEP)",
			field: func(c *Config) any { return &c.GCInterval }},
		{flag: "gc-max-idle", env: "DFLOCKD_GC_MAX_IDLE_S", oldEnv: "DFLOCKD_GC_MAX_UNUSED_TIME", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "prune keys unused for longer than this, >= 0 (old env name DFLOCKD_GC_MAX_UNUSED_TIME)",
			field: func(c *Config) any { return &c.GCMaxIdle }},
		{flag: "read-timeout", env: "DFLOCKD_READ_TIMEOUT_S", kind: kindSeconds, min: 1, max: maxSeconds, arg: "SECONDS",
			usage: "close a connection that sends no complete line for this long, > 0",
			field: func(c *Config) any { return &c.ReadTimeout }},
		{flag: "write-timeout", env: "DFLOCKD_WRITE_TIMEOUT_S", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "close a connection whose reply cannot be written for this long, >= 0 (0 = no limit)",
			field: func(c *Config) any { return &c.WriteTimeout }},
		{flag: "shutdown-timeout", env: "DFLOCKD_SHUTDOWN_TIMEOUT_S", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "on SIGINT/SIGTERM wait this long for connections to end, >= 0 (0 = forever)",
			field: func(c *Config) any { return &c.ShutdownTimeout }},
	}},
	{"Limits (0 = unlimited where allowed)", []setting{
		{flag: "max-locks", env: "DFLOCKD_MAX_LOCKS", kind: kindInt, min: 1, max: maxInt, arg: "N",
			usage: "distinct lock and semaphore keys, > 0",
			field: func(c *Config) any { return &c.MaxLocks }},
		{flag: "max-connections", env: "DFLOCKD_MAX_CONNECTIONS", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "concurrent client connections, >= 0; extra ones are closed at once",
			field: func(c *Config) any { return &c.MaxConnections }},
		{flag: "max-connections-per-ip", env: "DFLOCKD_MAX_CONNECTIONS_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "concurrent client connections from one IP address, >= 0; extra ones are closed at once",
			field: func(c *Config) any { return &c.MaxConnsPerIP }},
		{flag: "max-waiters", env: "DFLOCKD_MAX_WAITERS", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "queued waiters per key, >= 0",
			field: func(c *Config) any { return &c.MaxWaiters }},
		{flag: "max-keys", env: "DFLOCKD_MAX_KEYS", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "counters + KV entries (+ lists, barriers) together, >= 0",
			field: func(c *Config) any { return &c.MaxKeys }},
		{flag: "max-list-length", env: "DFLOCKD_MAX_LIST_LENGTH", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "items per list, >= 0 (accepted for compatibility)",
			field: func(c *Config) any { return &c.MaxListLength }},
		{flag: "max-subscriptions", env: "DFLOCKD_MAX_SUBSCRIPTIONS", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "signal subscriptions, >= 0 (accepted for compatibility)",
			field: func(c *Config) any { return &c.MaxSubscriptions }},
	}},
	{"Behaviour", []setting{
		{flag: flagAutoRelease, env: "DFLOCKD_AUTO_RELEASE_ON_DISCONNECT", kind: kindBool,
			usage: "release the locks of a connection when it closes (false: keep them until their lease ends)",
			field: func(c *Config) any { return &c.AutoReleaseOnDisconnect }},
		{flag: flagNoAutoRelease, kind: kindManualBool, def: "-",
			usage: "same as --auto-release-on-disconnect=false"},
		{flag: "fence-state-file", env: "DFLOCKD_FENCE_STATE_FILE", kind: kindString, arg: "FILE",
			usage: "file keeping fencing tokens increasing across restarts (unset = none)",
			field: func(c *Config) any { return &c.FenceStateFile }},
		{flag: "compat", env: "DFLOCKD_COMPAT", kind: kindCompat, arg: "PROFILE",
			usage: "wire profile: v2, v1 (dflockd v1.10.0), or rf (dflockd's redis-feats line, 4-field grants)",
			field: func(c *Config) any { return &c.Compat }},
		{flag: "loops", env: "DFLOCKD_LOOPS", kind: kindInt, min: 0, max: maxLoops, arg: "N",
			usage: "event loops, 0..4096 (0 = one per CPU)",
			field: func(c *Config) any { return &c.Loops }},
		{flag: "debug", env: "DFLOCKD_DEBUG", kind: kindBool,
			usage: "log debug messages",
			field: func(c *Config) any { return &c.Debug }},
		{flag: "log-format", env: "DFLOCKD_LOG_FORMAT", kind: kindString, arg: "FORMAT", choices: []string{"text", "json"},
			usage: "log lines as text (key=value) or json, on stderr",
			field: func(c *Config) any { return &c.LogFormat }},
		{flag: "cpu-profile", env: "DFLOCKD_CPU_PROFILE", kind: kindString, arg: "FILE",
			usage: "write a Go CPU profile of the whole run to FILE, for go tool pprof (unset = none)",
			field: func(c *Config) any { return &c.CPUProfile }},
	}},
	{"Authentication (first set wins: --auth-token, --auth-token-file, DFLOCKD_AUTH_TOKEN, DFLOCKD_AUTH_TOKEN_FILE)", []setting{
		{flag: flagAuthToken, env: envAuthToken, kind: kindManual, arg: "TOKEN", def: "unset",
			usage: "clients must send 'auth <token>' first; trimmed, single line"},
		{flag: flagAuthTokenFile, env: envAuthTokenFile, kind: kindManual, arg: "FILE", def: "unset",
			usage: "read the token from this file (contents trimmed)"},
	}},
	{"Sharing one server between teams", []setting{
		{flag: "policy-file", env: "DFLOCKD_POLICY_FILE", kind: kindString, arg: "FILE",
			usage: "identities, permissions and quotas (docs/sharing.md); SIGHUP reloads it",
			field: func(c *Config) any { return &c.PolicyFile }},
	}},
	{"HTTP API (spec §F.2): --http-port serves it, with /health, /ready and /metrics", []setting{
		{flag: "http-port", env: "DFLOCKD_HTTP_PORT", kind: kindInt, min: 0, max: maxPort, arg: "PORT",
			usage: "serve the HTTP API on this TCP port, 0..65535 (0 = off); HTTPS with --tls-cert",
			field: func(c *Config) any { return &c.HTTP.Port }},
		{flag: "http-host", env: "DFLOCKD_HTTP_HOST", kind: kindString, arg: "ADDR", def: "--host",
			usage: "address the HTTP API listens on (unset = --host's)",
			field: func(c *Config) any { return &c.HTTP.Host }},
		{flag: "http-sse-ping-interval", env: "DFLOCKD_HTTP_SSE_PING_S", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "keep-alive comment period of the SSE streams (/v1/signals, /v1/events), >= 0 (0 = no pings)",
			field: func(c *Config) any { return &c.HTTP.SSEPingInterval }},
		{flag: "http-body-timeout", env: "DFLOCKD_HTTP_BODY_TIMEOUT_S", kind: kindSeconds, min: 1, max: maxSeconds, arg: "SECONDS",
			usage: "a request's body must come whole this long after its headers, >= 1; else it fails and its connection closes",
			field: func(c *Config) any { return &c.HTTP.BodyTimeout }},
		{flag: "http-session-idle-timeout", env: "DFLOCKD_HTTP_SESSION_IDLE_S", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "told to HTTP clients; a session idle for twice this is closed, >= 0 (0 = 20)",
			field: func(c *Config) any { return &c.HTTP.SessionIdleTimeout }},
		{flag: "http-max-sessions", env: "DFLOCKD_HTTP_MAX_SESSIONS", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "open HTTP sessions, >= 0; extra ones get 503 max_sessions",
			field: func(c *Config) any { return &c.HTTP.MaxSessions }},
		{flag: "http-max-sessions-per-ip", env: "DFLOCKD_HTTP_MAX_SESSIONS_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "open HTTP sessions of one IP address, >= 0; extra ones get 503 max_sessions_per_ip",
			field: func(c *Config) any { return &c.HTTP.MaxSessionsPerIP }},
		{flag: "http-max-connections-per-ip", env: "DFLOCKD_HTTP_MAX_CONNECTIONS_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "HTTP connections from one IP address, >= 0; extra ones are closed at once",
			field: func(c *Config) any { return &c.HTTP.MaxConnsPerIP }},
		{flag: "http-max-streams-per-ip", env: "DFLOCKD_HTTP_MAX_STREAMS_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "SSE streams from one IP address on each of /v1/events and /v1/signals (64 each in all), >= 0 (0 = no cap); extra ones get 503 max_streams_per_ip",
			field: func(c *Config) any { return &c.HTTP.MaxStreamsPerIP }},
		{flag: "http-rate-limit-per-ip", env: "DFLOCKD_HTTP_RATE_LIMIT_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "HTTP requests a second from one IP address, >= 0; extra ones get 429 (/health, /ready exempt)",
			field: func(c *Config) any { return &c.HTTP.RateLimitPerIP }},
		{flag: "http-rate-limit-burst", env: "DFLOCKD_HTTP_RATE_LIMIT_BURST", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "requests one IP address may make at once under the rate limit, >= 0 (0 = the rate)",
			field: func(c *Config) any { return &c.HTTP.RateLimitBurst }},
		{flag: "http-cors-allowed-origins", env: "DFLOCKD_HTTP_CORS_ALLOWED_ORIGINS", kind: kindString, arg: "LIST",
			usage: "origins browsers may call the HTTP API from, comma-separated ('*' = any; unset = no CORS)",
			field: func(c *Config) any { return &c.HTTP.CORSAllowedOrigins }},
		{flag: "http-access-log", env: "DFLOCKD_HTTP_ACCESS_LOG", kind: kindBool,
			usage: "log one line per HTTP request: method, path, status, bytes, duration, remote (401s are logged without it)",
			field: func(c *Config) any { return &c.HTTP.AccessLog }},
		{flag: "metrics-token", env: "DFLOCKD_METRICS_TOKEN", kind: kindString, arg: "TOKEN",
			usage: "bearer token for scrapers, good on /metrics only (the --auth-token is accepted there too)",
			field: func(c *Config) any { return &c.HTTP.MetricsToken }},
		{flag: "metrics-token-file", env: "DFLOCKD_METRICS_TOKEN_FILE", kind: kindString, arg: "FILE",
			usage: "read the metrics token from this file (contents trimmed) when --metrics-token is unset",
			field: func(c *Config) any { return &c.HTTP.MetricsTokenFile }},
		{flag: "metrics-auth", env: "DFLOCKD_METRICS_AUTH", kind: kindString, arg: "MODE", choices: []string{metricsAuthToken, metricsAuthNone},
			def:   metricsAuthToken, // the zero value, unset, means it
			usage: "token: /metrics wants --auth-token or --metrics-token when one is set; none: /metrics is open, even with --auth-token",
			field: func(c *Config) any { return &c.HTTP.MetricsAuth }},
		{flag: "observatory-events", env: "DFLOCKD_OBSERVATORY_EVENTS", kind: kindInt, min: 0, max: maxObservatoryEvents, arg: "N",
			usage: "lock events the observatory keeps for /ui and /v1/events, 0..16777216, 80 bytes each plus their keys (0 = none, and no grant or wait times)",
			field: func(c *Config) any { return &c.HTTP.ObservatoryEvents }},
	}},
	{"Cluster (spec §G): --raft-dir makes this server one member of a raft cluster", []setting{
		{flag: "raft-dir", env: "DFLOCKD_RAFT_DIR", kind: kindString, arg: "DIR",
			usage: "cluster mode: the raft log and snapshots live here (unset = single node)",
			field: func(c *Config) any { return &c.Cluster.RaftDir }},
		{flag: "raft-recover", env: "DFLOCKD_RAFT_RECOVER", kind: kindBool,
			usage: "start although the raft log lost entries this member acknowledged: drop the damage, copy it back from the leader; until caught up, vote only for a member that holds it (not for a lone member)",
			field: func(c *Config) any { return &c.Cluster.Recover }},
		{flag: "raft-accept-loss", env: "DFLOCKD_RAFT_ACCEPT_LOSS", kind: kindBool,
			usage: "start although the raft log is damaged: drop the damage and go on without it, the loss accepted (a lone member's last resort)",
			field: func(c *Config) any { return &c.Cluster.AcceptLoss }},
		{flag: "node-id", env: "DFLOCKD_NODE_ID", kind: kindString, arg: "ID",
			usage: "this member's id, as --cluster-peers lists it",
			field: func(c *Config) any { return &c.Cluster.NodeID }},
		{flag: "raft-addr", env: "DFLOCKD_RAFT_ADDR", kind: kindString, arg: "ADDR",
			usage: "host:port the raft traffic of this member listens on, and the address the other members are told (as --cluster-peers lists it)",
			field: func(c *Config) any { return &c.Cluster.RaftAddr }},
		{flag: "raft-bind", env: "DFLOCKD_RAFT_BIND", kind: kindString, arg: "ADDR",
			usage: "host:port the raft listener binds instead of --raft-addr's, which is then only advertised and may be a DNS name that does not resolve yet (empty host = all interfaces)",
			field: func(c *Config) any { return &c.Cluster.RaftBind }},
		{flag: "cluster-peers", env: "DFLOCKD_CLUSTER_PEERS", kind: kindString, arg: "LIST",
			usage: "every member, this one too: id=raftHost:raftPort@clientHost:clientPort,...",
			field: func(c *Config) any { return &c.Cluster.Peers }},
		{flag: "advertise-addr", env: "DFLOCKD_ADVERTISE_ADDR", kind: kindString, arg: "ADDR",
			usage: "client address that redirects to this member name (default: its --cluster-peers entry)",
			field: func(c *Config) any { return &c.Cluster.AdvertiseAddr }},
		{flag: "cluster-bootstrap", env: "DFLOCKD_CLUSTER_BOOTSTRAP", kind: kindBool,
			usage: "create the cluster from --cluster-peers if the raft directory is empty",
			field: func(c *Config) any { return &c.Cluster.Bootstrap }},
		{flag: "cluster-forward", env: "DFLOCKD_CLUSTER_FORWARD", kind: kindBool,
			usage: "a follower relays each client connection to the leader, for clients that do not follow error_not_leader",
			field: func(c *Config) any { return &c.Cluster.Forward }},
		{flag: "cluster-loops", env: "DFLOCKD_CLUSTER_LOOPS", kind: kindBool,
			usage: "serve this member's plain-TCP clients on the gnet loops (false: a goroutine per connection; cluster mode)",
			field: func(c *Config) any { return &c.Cluster.Loops }},
		{flag: "orphan-ttl", env: "DFLOCKD_ORPHAN_TTL_S", kind: kindSeconds, min: 0, max: maxSeconds, arg: "SECONDS",
			usage: "keep a closed connection's locks and queue places this long for a new connection presenting its stable-ref (0: off; cluster mode)",
			field: func(c *Config) any { return &c.Cluster.OrphanTTL }},
		{flag: "raft-auth-token", env: "DFLOCKD_RAFT_AUTH_TOKEN", kind: kindString, arg: "TOKEN",
			usage: "shared secret of the members, >= 32 bytes; required in cluster mode",
			field: func(c *Config) any { return &c.Cluster.RaftToken }},
		{flag: "raft-auth-token-file", env: "DFLOCKD_RAFT_AUTH_TOKEN_FILE", kind: kindString, arg: "FILE",
			usage: "read the raft token from this file (contents trimmed) when --raft-auth-token is unset",
			field: func(c *Config) any { return &c.Cluster.RaftTokenFile }},
		{flag: "raft-tls-cert", env: "DFLOCKD_RAFT_TLS_CERT", kind: kindString, arg: "FILE",
			usage: "raft traffic over mutual TLS 1.3 with this certificate; with --raft-tls-key and --raft-tls-ca",
			field: func(c *Config) any { return &c.Cluster.RaftTLSCert }},
		{flag: "raft-tls-key", env: "DFLOCKD_RAFT_TLS_KEY", kind: kindString, arg: "FILE",
			usage: "the raft certificate's private key",
			field: func(c *Config) any { return &c.Cluster.RaftTLSKey }},
		{flag: "raft-tls-ca", env: "DFLOCKD_RAFT_TLS_CA", kind: kindString, arg: "FILE",
			usage: "CA that signed every member's raft certificate",
			field: func(c *Config) any { return &c.Cluster.RaftTLSCA }},
		{flag: "admin-token", env: "DFLOCKD_ADMIN_TOKEN", kind: kindString, arg: "TOKEN",
			usage: "token of the HTTP admin routes (X-Dflockd-Admin): force release of a lock, and on a cluster adding and removing members; unset: they answer 503",
			field: func(c *Config) any { return &c.Cluster.AdminToken }},
		{flag: "admin-token-file", env: "DFLOCKD_ADMIN_TOKEN_FILE", kind: kindString, arg: "FILE",
			usage: "read the admin token from this file (contents trimmed) when --admin-token is unset",
			field: func(c *Config) any { return &c.Cluster.AdminTokenFile }},
	}},
	{"Information", []setting{
		{flag: flagVersion, kind: kindManualBool, def: "-", usage: "print the version and exit"},
		{flag: flagHelp, kind: kindManualBool, def: "-", usage: "print this help and exit"},
	}},
}

// unsupportedFlag is a dflockd flag whose feature dflockd-ng lacks. It is
// recognised and refuses to start rather than being ignored: an ignored
// --raft-dir would run a lone node where a cluster was meant.
//
// Rule for harmless values, which are accepted: a value that leaves the
// feature off in dflockd as well, i.e.
//   - an empty value, from the flag or the variable (empty env = unset, and
//     dflockd treats an empty cert, address or directory as "not set");
//   - for off == "0": any value that parses as the number 0 (--orphan-ttl,
//     where 0 means no orphan keeping);
//   - for off == "false": a false boolean (--cluster-bootstrap).
//
// Every other value refuses startup with a message naming the flag or
// variable. Values are never echoed: several of them are secrets.
type unsupportedFlag struct {
	flag   string
	env    string
	isBool bool
	off    string // "0", "false" or "" (only empty is harmless)
	arg    string // placeholder in --help
	reason string // completes "<name>: "
}

// unsupportedFlags is empty since --http-sse-ping-interval works (GET
// /v1/signals); the mechanism stays for the next feature that lags.
var unsupportedFlags []unsupportedFlag

// harmless reports whether v leaves the unsupported feature off (see
// unsupportedFlag). isEnv selects the boolean grammar of the variable.
func (u *unsupportedFlag) harmless(v string, isEnv bool) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return true
	}
	switch u.off {
	case "0":
		n, err := strconv.ParseInt(v, 0, 64)
		return err == nil && n == 0
	case "false":
		if isEnv {
			b, ok := parseEnvBool(v)
			return ok && !b
		}
		b, err := strconv.ParseBool(v)
		return err == nil && !b
	}
	return false
}

// knownFlag says whether name (without dashes) is a flag of the command
// line, and whether it is boolean.
func knownFlag(name string) (isBool, ok bool) {
	if name == flagHelpShort {
		return true, true
	}
	for _, g := range settingGroups {
		for _, s := range g.settings {
			if s.flag == name {
				return s.kind == kindBool || s.kind == kindManualBool, true
			}
		}
	}
	for _, u := range unsupportedFlags {
		if u.flag == name {
			return u.isBool, true
		}
	}
	return false, false
}

// flagNames lists the long flags, without dashes, in --help order.
func flagNames() []string {
	var names []string
	for _, g := range settingGroups {
		for _, s := range g.settings {
			names = append(names, s.flag)
		}
	}
	for _, u := range unsupportedFlags {
		names = append(names, u.flag)
	}
	return names
}
