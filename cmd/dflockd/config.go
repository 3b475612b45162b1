package main

// Configuration of the dflockd binary: every flag and DFLOCKD_* environment
// variable of dflockd v2 (spec §E.2) with the same defaults, resolved as
// explicit flag > environment > default (spec §E.1, v1.16/V2 row, and §I.9).
//
// The flag and variable names, defaults and ranges live in one table
// (settings) that drives parsing, validation and the --help text alike, so
// the three cannot drift apart. LoadConfig is a pure function of its
// arguments apart from reading an auth token file; it keeps no state.
//
// Decisions taken where the spec is silent:
//   - Flag values are parsed like Go's flag package parsed them in dflockd
//     (integers with strconv.ParseInt base 0, so "0x10" and "010" are hex and
//     octal; booleans with strconv.ParseBool). Environment integers are
//     decimal and environment values are trimmed of surrounding white space.
//   - An environment variable that is present but empty counts as unset, as
//     in every Go dflockd ("non-empty env wins").
//   - A value that is overridden (an env var shadowed by its flag, a lower
//     auth-token source) is neither parsed nor validated: it is not used.
//   - Every problem found after flag parsing is reported, joined, so an
//     operator can fix them all at once; values of secrets are never echoed.
//   - --help and --version stop at flag parsing: they work whatever the
//     environment holds, and the other fields keep their defaults.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
)

// Config is the effective configuration of the dflockd binary.
type Config struct {
	Host string // --host, DFLOCKD_HOST, default "127.0.0.1"
	Port int    // --port, DFLOCKD_PORT, default 6388, 0..65535
	// GodistlockPort: --godistlock-port, DFLOCKD_GODISTLOCK_PORT, 0 = off,
	// 1..65535 = a second listener on Host for godistlock clients (loop/godistlock.go).
	GodistlockPort int
	// TLSCert and TLSKey: --tls-cert, --tls-key, DFLOCKD_TLS_CERT,
	// DFLOCKD_TLS_KEY; both or neither (checkTLS). Set, every listener
	// speaks TLS only (spec §D.2), served by package netconn.
	TLSCert string
	TLSKey  string

	DefaultLeaseTTL    time.Duration // --default-lease-ttl, DFLOCKD_DEFAULT_LEASE_TTL_S, 33 s, > 0
	LeaseSweepInterval time.Duration // --lease-sweep-interval, DFLOCKD_LEASE_SWEEP_INTERVAL_S, 1 s, > 0 (accepted for compatibility; our timer wheel evicts on time)
	GCInterval         time.Duration // --gc-interval, DFLOCKD_GC_INTERVAL_S (old alias DFLOCKD_GC_LOOP_SLEEP), 5 s, > 0
	GCMaxIdle          time.Duration // --gc-max-idle, DFLOCKD_GC_MAX_IDLE_S (old alias DFLOCKD_GC_MAX_UNUSED_TIME), 60 s, >= 0
	ReadTimeout        time.Duration // --read-timeout, DFLOCKD_READ_TIMEOUT_S, 23 s, > 0
	WriteTimeout       time.Duration // --write-timeout, DFLOCKD_WRITE_TIMEOUT_S, 5 s, >= 0
	ShutdownTimeout    time.Duration // --shutdown-timeout, DFLOCKD_SHUTDOWN_TIMEOUT_S, 30 s, >= 0 (0 = wait forever)

	MaxLocks         int // --max-locks, DFLOCKD_MAX_LOCKS, 1024, > 0
	MaxConnections   int // --max-connections, DFLOCKD_MAX_CONNECTIONS, 0 = unlimited, >= 0
	MaxConnsPerIP    int // --max-connections-per-ip, DFLOCKD_MAX_CONNECTIONS_PER_IP, 0 = unlimited, >= 0
	MaxWaiters       int // --max-waiters, DFLOCKD_MAX_WAITERS, 0 = unlimited, >= 0
	MaxKeys          int // --max-keys, DFLOCKD_MAX_KEYS, 0 (rf primitives; accepted now)
	MaxListLength    int // --max-list-length, DFLOCKD_MAX_LIST_LENGTH, 0
	MaxSubscriptions int // --max-subscriptions, DFLOCKD_MAX_SUBSCRIPTIONS, 0

	AutoReleaseOnDisconnect bool   // --auto-release-on-disconnect, DFLOCKD_AUTO_RELEASE_ON_DISCONNECT, true; also --no-auto-release-on-disconnect (spec I.10 alias)
	Debug                   bool   // --debug, DFLOCKD_DEBUG
	LogFormat               string // --log-format, DFLOCKD_LOG_FORMAT: "text" (default) or "json"

	AuthToken      string // resolved token (see resolveAuthToken); "" = auth off
	FenceStateFile string // --fence-state-file, DFLOCKD_FENCE_STATE_FILE

	Compat string // --compat, DFLOCKD_COMPAT: "v2" (default), "v1" or "rf"
	Loops  int    // --loops, DFLOCKD_LOOPS: event loops, default 0 = runtime.NumCPU() (resolved by main), >= 0

	// HTTP: the HTTP API's settings (http.go); Port 0 = no HTTP API.
	HTTP HTTPConfig

	// Cluster: the cluster settings (cluster.go); RaftDir set = cluster mode.
	Cluster ClusterConfig

	ShowVersion bool // --version
	ShowHelp    bool // --help / -h (main prints the help text to stdout and exits 0)
}

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
)

// Compatibility profiles named by --compat.
const (
	compatV2 = "v2" // dflockd v2 single-node wire behaviour (spec §I, default profile)
	compatV1 = "v1" // dflockd v1.10.0, incl. its configuration rules (spec §E.1)
	compatRF = "rf" // dflockd's redis-feats line: fence in grant replies, shared lock/semaphore map (spec §I)
)

// DefaultConfig returns the configuration used when no flag or environment
// variable is given: the defaults of dflockd v2 (spec §E.2).
func DefaultConfig() Config {
	return Config{
		Host:                    "127.0.0.1",
		Port:                    6388,
		DefaultLeaseTTL:         33 * time.Second,
		LeaseSweepInterval:      1 * time.Second,
		GCInterval:              5 * time.Second,
		GCMaxIdle:               60 * time.Second,
		ReadTimeout:             23 * time.Second,
		WriteTimeout:            5 * time.Second,
		ShutdownTimeout:         30 * time.Second,
		MaxLocks:                1024,
		AutoReleaseOnDisconnect: true,
		Compat:                  compatV2,
		LogFormat:               "text",
		HTTP:                    HTTPConfig{SessionIdleTimeout: 20 * time.Second},
	}
}

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
	}},
	{"Authentication (first set wins: --auth-token, --auth-token-file, DFLOCKD_AUTH_TOKEN, DFLOCKD_AUTH_TOKEN_FILE)", []setting{
		{flag: flagAuthToken, env: envAuthToken, kind: kindManual, arg: "TOKEN", def: "unset",
			usage: "clients must send 'auth <token>' first; trimmed, single line"},
		{flag: flagAuthTokenFile, env: envAuthTokenFile, kind: kindManual, arg: "FILE", def: "unset",
			usage: "read the token from this file (contents trimmed)"},
	}},
	{"HTTP API (spec §F.2): --http-port serves it, with /health, /ready and /metrics", []setting{
		{flag: "http-port", env: "DFLOCKD_HTTP_PORT", kind: kindInt, min: 0, max: maxPort, arg: "PORT",
			usage: "serve the HTTP API on this TCP port, 0..65535 (0 = off); HTTPS with --tls-cert",
			field: func(c *Config) any { return &c.HTTP.Port }},
		{flag: "http-host", env: "DFLOCKD_HTTP_HOST", kind: kindString, arg: "ADDR", def: "--host",
			usage: "address the HTTP API listens on (unset = --host's)",
			field: func(c *Config) any { return &c.HTTP.Host }},
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
		{flag: "http-rate-limit-per-ip", env: "DFLOCKD_HTTP_RATE_LIMIT_PER_IP", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "HTTP requests a second from one IP address, >= 0; extra ones get 429 (/health, /ready exempt)",
			field: func(c *Config) any { return &c.HTTP.RateLimitPerIP }},
		{flag: "http-rate-limit-burst", env: "DFLOCKD_HTTP_RATE_LIMIT_BURST", kind: kindInt, min: 0, max: maxInt, arg: "N",
			usage: "requests one IP address may make at once under the rate limit, >= 0 (0 = the rate)",
			field: func(c *Config) any { return &c.HTTP.RateLimitBurst }},
		{flag: "http-cors-allowed-origins", env: "DFLOCKD_HTTP_CORS_ALLOWED_ORIGINS", kind: kindString, arg: "LIST",
			usage: "origins browsers may call the HTTP API from, comma-separated ('*' = any; unset = no CORS)",
			field: func(c *Config) any { return &c.HTTP.CORSAllowedOrigins }},
	}},
	{"Cluster (spec §G): --raft-dir makes this server one member of a raft cluster", []setting{
		{flag: "raft-dir", env: "DFLOCKD_RAFT_DIR", kind: kindString, arg: "DIR",
			usage: "cluster mode: the raft log and snapshots live here (unset = single node)",
			field: func(c *Config) any { return &c.Cluster.RaftDir }},
		{flag: "raft-recover", env: "DFLOCKD_RAFT_RECOVER", kind: kindBool,
			usage: "start although the raft log lost entries this member acknowledged: drop the damage, copy it back from the leader, vote only once caught up (not for a lone member)",
			field: func(c *Config) any { return &c.Cluster.Recover }},
		{flag: "raft-accept-loss", env: "DFLOCKD_RAFT_ACCEPT_LOSS", kind: kindBool,
			usage: "start although the raft log is damaged: drop the damage and go on without it, the loss accepted (a lone member's last resort)",
			field: func(c *Config) any { return &c.Cluster.AcceptLoss }},
		{flag: "node-id", env: "DFLOCKD_NODE_ID", kind: kindString, arg: "ID",
			usage: "this member's id, as --cluster-peers lists it",
			field: func(c *Config) any { return &c.Cluster.NodeID }},
		{flag: "raft-addr", env: "DFLOCKD_RAFT_ADDR", kind: kindString, arg: "ADDR",
			usage: "host:port the raft traffic of this member listens on",
			field: func(c *Config) any { return &c.Cluster.RaftAddr }},
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
			usage: "token of the HTTP admin routes that add and remove members (X-Dflockd-Admin); unset: they answer 503",
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

const (
	// The ping interval of dflockd v1.15–v1.16's SSE signal stream (GET
	// /v1/signals), which dflockd v2 dropped: an interval set means a
	// client of that stream is expected, and none would get it.
	reasonSSE = "the HTTP API's SSE signal routes (dflockd v1.15-v1.16) are not supported by dflockd-ng yet; " +
		"use the line protocol's listen and signal, or remove the setting"
)

var unsupportedFlags = []unsupportedFlag{
	{flag: "http-sse-ping-interval", env: "DFLOCKD_HTTP_SSE_PING_S", arg: "SECONDS", reason: reasonSSE},
}

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

// rawFlag records the text of a flag; parsing and validation happen after
// flag.Parse so that messages have one form for flags and variables.
type rawFlag struct {
	text   string
	isBool bool
}

func (r *rawFlag) String() string {
	if r == nil {
		return ""
	}
	return r.text
}

func (r *rawFlag) Set(s string) error { r.text = s; return nil }

// IsBoolFlag lets boolean flags be given bare (--debug), as with flag.Bool.
func (r *rawFlag) IsBoolFlag() bool { return r.isBool }

// source is the text of one setting and where it came from.
type source struct {
	name string // "--flag" or the variable name, for messages
	text string
	env  bool
}

// LoadConfig parses args (without the program name) and the environment
// (getenv returns value, present) and returns the effective configuration.
// Messages meant for the operator (help text, deprecation warnings) go to w.
// Any invalid value returns an error whose text names the flag or variable
// and the expected form; several problems are joined into one error. On error
// the returned Config is the zero value.
//
// When --help or --version is given, LoadConfig sets ShowHelp/ShowVersion
// and returns without reading the
// environment; the other fields then hold their defaults.
func LoadConfig(args []string, getenv func(string) (string, bool), w io.Writer) (Config, error) {
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	if w == nil {
		w = io.Discard
	}

	fs := flag.NewFlagSet("dflockd", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, help is printed by us
	fs.Usage = func() {}
	raw := make(map[string]*rawFlag)
	add := func(name string, isBool bool) {
		r := &rawFlag{isBool: isBool}
		raw[name] = r
		fs.Var(r, name, "")
	}
	for _, g := range settingGroups {
		for _, s := range g.settings {
			add(s.flag, s.kind == kindBool || s.kind == kindManualBool)
		}
	}
	add(flagHelpShort, true)
	for _, u := range unsupportedFlags {
		add(u.flag, u.isBool)
	}

	if err := fs.Parse(args); err != nil {
		return Config{}, fmt.Errorf("%w (see dflockd --help)", err)
	}
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cli := func(name string) (source, bool) {
		if !set[name] {
			return source{}, false
		}
		return source{name: "--" + name, text: raw[name].text}, true
	}

	cfg := DefaultConfig()

	// --help and --version answer whatever the rest of the configuration.
	var errs []error
	for _, name := range []string{flagHelp, flagHelpShort, flagVersion} {
		src, ok := cli(name)
		if !ok {
			continue
		}
		var b bool
		if err := parseBool(src, &b); err != nil {
			errs = append(errs, err)
			continue
		}
		if name == flagVersion {
			cfg.ShowVersion = cfg.ShowVersion || b
		} else {
			cfg.ShowHelp = cfg.ShowHelp || b
		}
	}
	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	if cfg.ShowHelp || cfg.ShowVersion {
		return cfg, nil
	}

	if fs.NArg() > 0 {
		a := fs.Arg(0)
		msg := fmt.Sprintf("unexpected argument %q: dflockd takes only flags", a)
		if _, err := strconv.ParseBool(a); err == nil {
			msg += " (write a boolean flag as --flag=" + a + ")"
		}
		return Config{}, errors.New(msg)
	}

	env := func(name string) (source, bool) {
		if name == "" {
			return source{}, false
		}
		v, ok := getenv(name)
		if !ok || v == "" {
			return source{}, false
		}
		return source{name: name, text: v, env: true}, true
	}

	for i := range unsupportedFlags {
		u := &unsupportedFlags[i]
		if src, ok := cli(u.flag); ok && !u.harmless(src.text, false) {
			errs = append(errs, fmt.Errorf("%s: %s", src.name, u.reason))
		}
		if src, ok := env(u.env); ok && !u.harmless(src.text, true) {
			errs = append(errs, fmt.Errorf("%s: %s", src.name, u.reason))
		}
	}

	// Under --compat=v1 the configuration follows dflockd v1.10 too (spec
	// §E.1): an invalid environment value is ignored (v2 refuses to start),
	// the auth token order differs, and --gc-max-idle must be > 0.
	v1 := false
	if src, ok := cli("compat"); ok {
		v1 = strings.EqualFold(strings.TrimSpace(src.text), compatV1)
	} else if src, ok := env("DFLOCKD_COMPAT"); ok {
		v1 = strings.EqualFold(strings.TrimSpace(src.text), compatV1)
	}

	for _, g := range settingGroups {
		for i := range g.settings {
			s := &g.settings[i]
			if s.field == nil {
				continue
			}
			src, ok := cli(s.flag)
			if !ok {
				src, ok = env(s.env)
			}
			if old, oldOK := env(s.oldEnv); oldOK {
				if !ok {
					src, ok = old, true
					fmt.Fprintf(w, "warning: %s is deprecated; use %s\n", s.oldEnv, s.env)
				} else {
					fmt.Fprintf(w, "warning: %s is deprecated and ignored because %s is set; remove it\n",
						s.oldEnv, src.name)
				}
			}
			if !ok {
				continue
			}
			if err := s.apply(src, &cfg); err != nil {
				if v1 && src.env && s.kind != kindCompat {
					fmt.Fprintf(w, "warning: %v; ignored, as dflockd v1.10 ignores it (--compat=v1)\n", err)
					continue
				}
				errs = append(errs, err)
			}
		}
	}
	if v1 && cfg.GCMaxIdle == 0 {
		errs = append(errs, errors.New("--gc-max-idle must be > 0 under --compat=v1, as in dflockd v1.10"))
	}

	if src, ok := cli(flagNoAutoRelease); ok {
		var no bool
		if err := parseBool(src, &no); err != nil {
			errs = append(errs, err)
		} else if pos, both := cli(flagAutoRelease); both && cfg.AutoReleaseOnDisconnect == no {
			errs = append(errs, fmt.Errorf("%s contradicts %s=%s; give one of them",
				src.name, pos.name, pos.text))
		} else {
			cfg.AutoReleaseOnDisconnect = !no
		}
	}

	token, err := resolveAuthToken(cli, env, v1)
	if err != nil {
		errs = append(errs, err)
	}
	cfg.AuthToken = token
	if err := checkGodistlock(&cfg); err != nil {
		errs = append(errs, err)
	}
	if err := checkTLS(&cfg, cli, env); err != nil {
		errs = append(errs, err)
	}
	if err := checkHTTP(&cfg); err != nil {
		errs = append(errs, err)
	}
	if err := resolveAdminToken(&cfg.Cluster); err != nil { // admin.go
		errs = append(errs, err)
	}
	if err := resolveRaftToken(&cfg.Cluster); err != nil {
		errs = append(errs, err)
	} else if err := checkCluster(&cfg); err != nil {
		errs = append(errs, err)
	}

	if len(errs) > 0 {
		return Config{}, errors.Join(errs...)
	}
	return cfg, nil
}

// apply parses src according to s and stores the value in cfg.
func (s *setting) apply(src source, cfg *Config) error {
	switch p := s.field(cfg).(type) {
	case *string:
		if s.kind == kindCompat {
			return parseCompat(src, p)
		}
		if len(s.choices) > 0 {
			v := strings.ToLower(strings.TrimSpace(src.text))
			if !slices.Contains(s.choices, v) {
				return fmt.Errorf("%s must be one of %s, got %q", src.name, strings.Join(s.choices, ", "), src.text)
			}
			*p = v
			return nil
		}
		*p = src.text
		return nil
	case *int:
		n, err := parseInt(src, s.min, s.max, "an integer")
		if err != nil {
			return err
		}
		*p = int(n)
	case *time.Duration:
		n, err := parseInt(src, s.min, s.max, "an integer number of seconds")
		if err != nil {
			return err
		}
		*p = time.Duration(n) * time.Second
	case *bool:
		return parseBool(src, p)
	default:
		panic("dflockd: setting --" + s.flag + " has a field of unsupported type")
	}
	return nil
}

// parseInt parses src as an integer in [lo, hi]. Flags follow Go's flag.Int
// (base prefixes allowed); variables are decimal.
func parseInt(src source, lo, hi int64, what string) (int64, error) {
	text := src.text
	base := 0
	if src.env {
		text = strings.TrimSpace(text)
		base = 10
	}
	n, err := strconv.ParseInt(text, base, 64)
	if err == nil && n >= lo && n <= hi {
		return n, nil
	}
	var want string
	switch {
	case hi == maxInt && lo == 0:
		want = what + " >= 0"
	case hi == maxInt && lo == 1:
		want = what + " > 0"
	default:
		want = fmt.Sprintf("%s in %d..%d", what, lo, hi)
	}
	return 0, fmt.Errorf("%s must be %s, got %q", src.name, want, src.text)
}

// parseBool parses a flag like flag.Bool (strconv.ParseBool) and a variable
// as 1/yes/true or 0/no/false in any case (spec §E.1).
func parseBool(src source, p *bool) error {
	if src.env {
		b, ok := parseEnvBool(src.text)
		if !ok {
			return fmt.Errorf("%s must be a boolean (1, yes, true, 0, no or false), got %q", src.name, src.text)
		}
		*p = b
		return nil
	}
	b, err := strconv.ParseBool(src.text)
	if err != nil {
		return fmt.Errorf("%s must be a boolean (true or false), got %q", src.name, src.text)
	}
	*p = b
	return nil
}

func parseEnvBool(v string) (b, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "yes", "true":
		return true, true
	case "0", "no", "false":
		return false, true
	}
	return false, false
}

// parseCompat accepts the implemented profiles, in any case.
func parseCompat(src source, p *string) error {
	switch v := strings.ToLower(strings.TrimSpace(src.text)); v {
	case compatV2, compatV1, compatRF:
		*p = v
		return nil
	}
	return fmt.Errorf("%s must be %s, %s or %s, got %q", src.name, compatV2, compatV1, compatRF, src.text)
}

// resolveAuthToken picks the token by the v1.16/V2 order (spec §E.1):
// --auth-token (if given) > --auth-token-file (if given) > DFLOCKD_AUTH_TOKEN
// > DFLOCKD_AUTH_TOKEN_FILE; under v1, by v1.10's: DFLOCKD_AUTH_TOKEN first.
// Only the winning source is read. Values and file contents are trimmed; an
// empty result or a CR/LF inside is an error, since a token can only
// travel on one protocol line. The token is never echoed.
func resolveAuthToken(cli, env func(string) (source, bool), v1 bool) (string, error) {
	var src source
	ok, isFile := false, false
	if v1 {
		src, ok = env(envAuthToken)
	}
	if !ok {
		src, ok = cli(flagAuthToken)
	}
	if !ok {
		src, ok = cli(flagAuthTokenFile)
		isFile = ok
	}
	if !ok {
		src, ok = env(envAuthToken)
	}
	if !ok {
		src, ok = env(envAuthTokenFile)
		isFile = ok
	}
	if !ok {
		return "", nil
	}

	what := src.name
	token := src.text
	if isFile {
		path := strings.TrimSpace(src.text)
		if path == "" {
			return "", fmt.Errorf("%s must name a file, got an empty path", src.name)
		}
		b, err := readTokenFile(path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return "", fmt.Errorf("%s: cannot read token file %q: %v", src.name, path, err)
		}
		token = string(b)
		what = fmt.Sprintf("%s: token file %q", src.name, path)
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", fmt.Errorf("%s is empty (after trimming white space); give a token or leave it unset", what)
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("%s contains a line break (CR or LF); the token must be a single line", what)
	}
	if len(token) > parse.MaxAuthLine {
		// No client could ever authenticate: an auth line is capped.
		return "", fmt.Errorf("%s is %d bytes; an auth request carries at most %d, so no client could match it", what, len(token), parse.MaxAuthLine)
	}
	return token, nil
}

// maxTokenFile bounds what is read of a token file: a token is at most
// parse.MaxAuthLine bytes, and white space around it is trimmed, but a
// file far larger than that is a mistake (the wrong path), not a token.
const maxTokenFile = 1 << 20

// readTokenFile reads a token file of at most maxTokenFile bytes.
func readTokenFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("the file is over %d bytes", maxTokenFile)
	}
	return b, nil
}
