package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
)

// env builds a getenv over a fixed map.
func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// load runs LoadConfig and returns what it wrote to the operator as well.
func load(t *testing.T, args []string, vars map[string]string) (Config, string, error) {
	t.Helper()
	var out bytes.Buffer
	cfg, err := LoadConfig(args, env(vars), &out)
	return cfg, out.String(), err
}

func mustLoad(t *testing.T, args []string, vars map[string]string) (Config, string) {
	t.Helper()
	cfg, out, err := load(t, args, vars)
	if err != nil {
		t.Fatalf("LoadConfig(%q, %v): unexpected error: %v", args, vars, err)
	}
	return cfg, out
}

// wantErr asserts that LoadConfig fails and that the message holds every part.
func wantErr(t *testing.T, args []string, vars map[string]string, parts ...string) string {
	t.Helper()
	cfg, _, err := load(t, args, vars)
	if err == nil {
		t.Fatalf("LoadConfig(%q, %v) = %+v, want an error", args, vars, cfg)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("LoadConfig(%q, %v) error %q does not contain %q", args, vars, err, p)
		}
	}
	if cfg != (Config{}) {
		t.Errorf("LoadConfig(%q, %v) returned a non-zero Config with an error: %+v", args, vars, cfg)
	}
	return err.Error()
}

func TestConfigDefaults(t *testing.T) {
	want := Config{
		Host:                    "127.0.0.1",
		Port:                    6388,
		DefaultLeaseTTL:         33 * time.Second,
		LeaseSweepInterval:      time.Second,
		GCInterval:              5 * time.Second,
		GCMaxIdle:               60 * time.Second,
		ReadTimeout:             23 * time.Second,
		WriteTimeout:            5 * time.Second,
		ShutdownTimeout:         30 * time.Second,
		MaxLocks:                1024,
		AutoReleaseOnDisconnect: true,
		Compat:                  "v2",
		LogFormat:               "text",
		HTTP:                    HTTPConfig{SessionIdleTimeout: 20 * time.Second, SSEPingInterval: 15 * time.Second, BodyTimeout: 10 * time.Second, MaxStreamsPerIP: 8},
		Cluster:                 ClusterConfig{Loops: true},
	}
	if got := DefaultConfig(); got != want {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
	cfg, out := mustLoad(t, nil, nil)
	if cfg != want {
		t.Errorf("LoadConfig(no args, no env) = %+v, want %+v", cfg, want)
	}
	if out != "" {
		t.Errorf("LoadConfig(no args, no env) wrote %q, want nothing", out)
	}
	// nil getenv and nil writer are tolerated.
	if cfg, err := LoadConfig(nil, nil, nil); err != nil || cfg != want {
		t.Errorf("LoadConfig(nil, nil, nil) = %+v, %v", cfg, err)
	}
}

// mapping lists every supported setting with a non-default value.
var mapping = []struct {
	flag, env, value string
	set              func(c *Config)
}{
	{"host", "DFLOCKD_HOST", "0.0.0.0", func(c *Config) { c.Host = "0.0.0.0" }},
	{"port", "DFLOCKD_PORT", "7000", func(c *Config) { c.Port = 7000 }},
	{"godistlock-port", "DFLOCKD_GODISTLOCK_PORT", "7001", func(c *Config) { c.GodistlockPort = 7001 }},
	{"default-lease-ttl", "DFLOCKD_DEFAULT_LEASE_TTL_S", "10", func(c *Config) { c.DefaultLeaseTTL = 10 * time.Second }},
	{"lease-sweep-interval", "DFLOCKD_LEASE_SWEEP_INTERVAL_S", "3", func(c *Config) { c.LeaseSweepInterval = 3 * time.Second }},
	{"gc-interval", "DFLOCKD_GC_INTERVAL_S", "7", func(c *Config) { c.GCInterval = 7 * time.Second }},
	{"gc-max-idle", "DFLOCKD_GC_MAX_IDLE_S", "0", func(c *Config) { c.GCMaxIdle = 0 }},
	{"read-timeout", "DFLOCKD_READ_TIMEOUT_S", "120", func(c *Config) { c.ReadTimeout = 120 * time.Second }},
	{"write-timeout", "DFLOCKD_WRITE_TIMEOUT_S", "0", func(c *Config) { c.WriteTimeout = 0 }},
	{"shutdown-timeout", "DFLOCKD_SHUTDOWN_TIMEOUT_S", "0", func(c *Config) { c.ShutdownTimeout = 0 }},
	{"max-locks", "DFLOCKD_MAX_LOCKS", "1", func(c *Config) { c.MaxLocks = 1 }},
	{"max-connections", "DFLOCKD_MAX_CONNECTIONS", "500", func(c *Config) { c.MaxConnections = 500 }},
	{"max-connections-per-ip", "DFLOCKD_MAX_CONNECTIONS_PER_IP", "8", func(c *Config) { c.MaxConnsPerIP = 8 }},
	{"max-waiters", "DFLOCKD_MAX_WAITERS", "64", func(c *Config) { c.MaxWaiters = 64 }},
	{"max-keys", "DFLOCKD_MAX_KEYS", "100", func(c *Config) { c.MaxKeys = 100 }},
	{"max-list-length", "DFLOCKD_MAX_LIST_LENGTH", "200", func(c *Config) { c.MaxListLength = 200 }},
	{"max-subscriptions", "DFLOCKD_MAX_SUBSCRIPTIONS", "300", func(c *Config) { c.MaxSubscriptions = 300 }},
	{"auto-release-on-disconnect", "DFLOCKD_AUTO_RELEASE_ON_DISCONNECT", "false", func(c *Config) { c.AutoReleaseOnDisconnect = false }},
	{"debug", "DFLOCKD_DEBUG", "true", func(c *Config) { c.Debug = true }},
	{"log-format", "DFLOCKD_LOG_FORMAT", "json", func(c *Config) { c.LogFormat = "json" }},
	{"cpu-profile", "DFLOCKD_CPU_PROFILE", "/tmp/dflockd.pprof", func(c *Config) { c.CPUProfile = "/tmp/dflockd.pprof" }},
	{"auth-token", "DFLOCKD_AUTH_TOKEN", "s3cret", func(c *Config) { c.AuthToken = "s3cret" }},
	{"fence-state-file", "DFLOCKD_FENCE_STATE_FILE", "/var/lib/dflockd/fence", func(c *Config) { c.FenceStateFile = "/var/lib/dflockd/fence" }},
	{"compat", "DFLOCKD_COMPAT", "v2", func(c *Config) { c.Compat = "v2" }},
	{"loops", "DFLOCKD_LOOPS", "4", func(c *Config) { c.Loops = 4 }},
	{"http-port", "DFLOCKD_HTTP_PORT", "6389", func(c *Config) { c.HTTP.Port = 6389 }},
	{"http-host", "DFLOCKD_HTTP_HOST", "0.0.0.0", func(c *Config) { c.HTTP.Host = "0.0.0.0" }},
	{"http-body-timeout", "DFLOCKD_HTTP_BODY_TIMEOUT_S", "3", func(c *Config) { c.HTTP.BodyTimeout = 3 * time.Second }},
	{"http-session-idle-timeout", "DFLOCKD_HTTP_SESSION_IDLE_S", "45", func(c *Config) { c.HTTP.SessionIdleTimeout = 45 * time.Second }},
	{"http-max-sessions", "DFLOCKD_HTTP_MAX_SESSIONS", "1000", func(c *Config) { c.HTTP.MaxSessions = 1000 }},
	{"http-max-sessions-per-ip", "DFLOCKD_HTTP_MAX_SESSIONS_PER_IP", "20", func(c *Config) { c.HTTP.MaxSessionsPerIP = 20 }},
	{"http-max-connections-per-ip", "DFLOCKD_HTTP_MAX_CONNECTIONS_PER_IP", "30", func(c *Config) { c.HTTP.MaxConnsPerIP = 30 }},
	{"http-max-streams-per-ip", "DFLOCKD_HTTP_MAX_STREAMS_PER_IP", "3", func(c *Config) { c.HTTP.MaxStreamsPerIP = 3 }},
	{"http-rate-limit-per-ip", "DFLOCKD_HTTP_RATE_LIMIT_PER_IP", "100", func(c *Config) { c.HTTP.RateLimitPerIP = 100 }},
	{"http-rate-limit-burst", "DFLOCKD_HTTP_RATE_LIMIT_BURST", "200", func(c *Config) { c.HTTP.RateLimitBurst = 200 }},
	{"http-cors-allowed-origins", "DFLOCKD_HTTP_CORS_ALLOWED_ORIGINS", "https://a.example, *", func(c *Config) { c.HTTP.CORSAllowedOrigins = "https://a.example, *" }},
}

func TestConfigFlagAndEnvMapping(t *testing.T) {
	for _, m := range mapping {
		want := DefaultConfig()
		m.set(&want)
		t.Run("flag/"+m.flag, func(t *testing.T) {
			if cfg, _ := mustLoad(t, []string{"--" + m.flag + "=" + m.value}, nil); cfg != want {
				t.Errorf("--%s=%s: got %+v, want %+v", m.flag, m.value, cfg, want)
			}
		})
		t.Run("env/"+m.env, func(t *testing.T) {
			if cfg, _ := mustLoad(t, nil, map[string]string{m.env: m.value}); cfg != want {
				t.Errorf("%s=%s: got %+v, want %+v", m.env, m.value, cfg, want)
			}
		})
	}
}

func TestConfigFlagSyntax(t *testing.T) {
	tests := []struct {
		args []string
		set  func(c *Config)
	}{
		{[]string{"-port", "1"}, func(c *Config) { c.Port = 1 }},
		{[]string{"--port", "1"}, func(c *Config) { c.Port = 1 }},
		{[]string{"-port=1"}, func(c *Config) { c.Port = 1 }},
		{[]string{"--port=1"}, func(c *Config) { c.Port = 1 }},
		// Go's flag.Int accepts base prefixes; dflockd parsed flags with it.
		{[]string{"--port=0x10"}, func(c *Config) { c.Port = 16 }},
		{[]string{"--debug"}, func(c *Config) { c.Debug = true }},
		{[]string{"-debug"}, func(c *Config) { c.Debug = true }},
		{[]string{"--debug=1"}, func(c *Config) { c.Debug = true }},
		{[]string{"--debug", "--debug=false"}, func(c *Config) {}},
		{[]string{"--auto-release-on-disconnect=false"}, func(c *Config) { c.AutoReleaseOnDisconnect = false }},
		{[]string{"--port=1", "--port=2"}, func(c *Config) { c.Port = 2 }}, // last wins
		{[]string{"--host="}, func(c *Config) { c.Host = "" }},             // explicit empty = all interfaces
		{[]string{"--default-lease-ttl", "5", "--read-timeout", "6"}, func(c *Config) {
			c.DefaultLeaseTTL = 5 * time.Second
			c.ReadTimeout = 6 * time.Second
		}},
	}
	for _, tt := range tests {
		want := DefaultConfig()
		tt.set(&want)
		if cfg, _ := mustLoad(t, tt.args, nil); cfg != want {
			t.Errorf("%q: got %+v, want %+v", tt.args, cfg, want)
		}
	}
}

func TestConfigPrecedence(t *testing.T) {
	// A value that differs from both the default and mapping's value.
	other := map[string]string{
		"host": "10.0.0.1", "port": "7001", "default-lease-ttl": "11", "lease-sweep-interval": "4",
		"gc-interval": "8", "gc-max-idle": "9", "read-timeout": "12", "write-timeout": "13",
		"shutdown-timeout": "14", "max-locks": "15", "max-connections": "16", "max-waiters": "17",
		"max-keys": "18", "max-list-length": "19", "max-subscriptions": "20",
		"auto-release-on-disconnect": "true", "debug": "false", "auth-token": "other",
		"fence-state-file": "/tmp/other", "compat": "V2", "loops": "2",
		"godistlock-port": "7002", "max-connections-per-ip": "21", "log-format": "text", "cpu-profile": "/tmp/other.pprof",
		"http-port": "7003", "http-host": "10.0.0.2", "http-session-idle-timeout": "22", "http-body-timeout": "28", "http-max-streams-per-ip": "29",
		"http-max-sessions": "23", "http-max-sessions-per-ip": "24", "http-max-connections-per-ip": "25",
		"http-rate-limit-per-ip": "26", "http-rate-limit-burst": "27", "http-cors-allowed-origins": "https://b.example",
	}
	for _, m := range mapping {
		t.Run(m.flag, func(t *testing.T) {
			o, ok := other[m.flag]
			if !ok {
				t.Fatalf("no second value for --%s", m.flag)
			}
			want := DefaultConfig()
			m.set(&want)
			// The flag beats the variable (booleans need the = form).
			if cfg, _ := mustLoad(t, []string{"--" + m.flag + "=" + m.value}, map[string]string{m.env: o}); cfg != want {
				t.Errorf("--%s %s with %s=%s: got %+v, want %+v", m.flag, m.value, m.env, o, cfg, want)
			}
			// An overridden variable is not used, so not validated either.
			if cfg, _ := mustLoad(t, []string{"--" + m.flag + "=" + m.value}, map[string]string{m.env: "\x00bad"}); cfg != want {
				t.Errorf("--%s with invalid %s: got %+v, want %+v", m.flag, m.env, cfg, want)
			}
			// An empty variable counts as unset: the default stays.
			if cfg, _ := mustLoad(t, nil, map[string]string{m.env: ""}); cfg != DefaultConfig() {
				t.Errorf("%s=\"\": got %+v, want defaults", m.env, cfg)
			}
		})
	}
}

func TestConfigInvalidEnv(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"DFLOCKD_PORT", "abc", `DFLOCKD_PORT must be an integer in 0..65535, got "abc"`},
		{"DFLOCKD_PORT", "65536", `DFLOCKD_PORT must be an integer in 0..65535, got "65536"`},
		{"DFLOCKD_PORT", "-1", `DFLOCKD_PORT must be an integer in 0..65535, got "-1"`},
		{"DFLOCKD_PORT", "0x10", `DFLOCKD_PORT must be an integer in 0..65535, got "0x10"`}, // env is decimal
		{"DFLOCKD_MAX_LOCKS", "x", `DFLOCKD_MAX_LOCKS must be an integer > 0, got "x"`},
		{"DFLOCKD_MAX_LOCKS", "0", `DFLOCKD_MAX_LOCKS must be an integer > 0, got "0"`},
		{"DFLOCKD_MAX_CONNECTIONS", "-1", `DFLOCKD_MAX_CONNECTIONS must be an integer >= 0, got "-1"`},
		{"DFLOCKD_MAX_WAITERS", "1.5", `DFLOCKD_MAX_WAITERS must be an integer >= 0, got "1.5"`},
		{"DFLOCKD_MAX_KEYS", "many", `DFLOCKD_MAX_KEYS must be an integer >= 0, got "many"`},
		{"DFLOCKD_MAX_LIST_LENGTH", "-5", `DFLOCKD_MAX_LIST_LENGTH must be an integer >= 0`},
		{"DFLOCKD_MAX_SUBSCRIPTIONS", "x", `DFLOCKD_MAX_SUBSCRIPTIONS must be an integer >= 0`},
		{"DFLOCKD_LOOPS", "-1", `DFLOCKD_LOOPS must be an integer in 0..4096, got "-1"`},
		{"DFLOCKD_LOOPS", "4097", `DFLOCKD_LOOPS must be an integer in 0..4096`},
		{"DFLOCKD_DEFAULT_LEASE_TTL_S", "0", `DFLOCKD_DEFAULT_LEASE_TTL_S must be an integer number of seconds in 1..9223372036, got "0"`},
		{"DFLOCKD_DEFAULT_LEASE_TTL_S", "33s", `DFLOCKD_DEFAULT_LEASE_TTL_S must be an integer number of seconds`},
		{"DFLOCKD_LEASE_SWEEP_INTERVAL_S", "0", `DFLOCKD_LEASE_SWEEP_INTERVAL_S must be an integer number of seconds in 1..`},
		{"DFLOCKD_GC_INTERVAL_S", "0", `DFLOCKD_GC_INTERVAL_S must be an integer number of seconds in 1..`},
		{"DFLOCKD_GC_MAX_IDLE_S", "-1", `DFLOCKD_GC_MAX_IDLE_S must be an integer number of seconds in 0..9223372036, got "-1"`},
		{"DFLOCKD_READ_TIMEOUT_S", "0", `DFLOCKD_READ_TIMEOUT_S must be an integer number of seconds in 1..`},
		{"DFLOCKD_WRITE_TIMEOUT_S", "-1", `DFLOCKD_WRITE_TIMEOUT_S must be an integer number of seconds in 0..`},
		{"DFLOCKD_SHUTDOWN_TIMEOUT_S", "soon", `DFLOCKD_SHUTDOWN_TIMEOUT_S must be an integer number of seconds in 0..`},
		{"DFLOCKD_DEBUG", "maybe", `DFLOCKD_DEBUG must be a boolean (1, yes, true, 0, no or false), got "maybe"`},
		{"DFLOCKD_DEBUG", "t", `DFLOCKD_DEBUG must be a boolean`}, // the env grammar is narrower than strconv.ParseBool
		{"DFLOCKD_AUTO_RELEASE_ON_DISCONNECT", "off", `DFLOCKD_AUTO_RELEASE_ON_DISCONNECT must be a boolean`},
	}
	for _, tt := range tests {
		wantErr(t, nil, map[string]string{tt.name: tt.value}, tt.want)
	}
}

func TestConfigEnvBoolAndTrim(t *testing.T) {
	for _, v := range []string{"1", "yes", "YES", "true", "True", " true "} {
		if cfg, _ := mustLoad(t, nil, map[string]string{"DFLOCKD_DEBUG": v}); !cfg.Debug {
			t.Errorf("DFLOCKD_DEBUG=%q: Debug = false, want true", v)
		}
	}
	for _, v := range []string{"0", "no", "No", "false", "FALSE"} {
		if cfg, _ := mustLoad(t, nil, map[string]string{"DFLOCKD_AUTO_RELEASE_ON_DISCONNECT": v}); cfg.AutoReleaseOnDisconnect {
			t.Errorf("DFLOCKD_AUTO_RELEASE_ON_DISCONNECT=%q: got true, want false", v)
		}
	}
	if cfg, _ := mustLoad(t, nil, map[string]string{"DFLOCKD_PORT": " 7000\n"}); cfg.Port != 7000 {
		t.Errorf("DFLOCKD_PORT=\" 7000\\n\": Port = %d, want 7000", cfg.Port)
	}
}

func TestConfigInvalidCLI(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--port=abc"}, []string{`--port must be an integer in 0..65535, got "abc"`}},
		{[]string{"--port", "65536"}, []string{`--port must be an integer in 0..65535, got "65536"`}},
		{[]string{"--port=-1"}, []string{`--port must be an integer in 0..65535`}},
		{[]string{"--port="}, []string{`--port must be an integer in 0..65535, got ""`}},
		{[]string{"--max-locks=0"}, []string{`--max-locks must be an integer > 0, got "0"`}},
		{[]string{"--max-waiters=-2"}, []string{`--max-waiters must be an integer >= 0`}},
		{[]string{"--loops=-1"}, []string{`--loops must be an integer in 0..4096`}},
		{[]string{"--default-lease-ttl=0"}, []string{`--default-lease-ttl must be an integer number of seconds in 1..9223372036, got "0"`}},
		{[]string{"--read-timeout=1.5"}, []string{`--read-timeout must be an integer number of seconds`}},
		{[]string{"--gc-max-idle=-1"}, []string{`--gc-max-idle must be an integer number of seconds in 0..`}},
		{[]string{"--gc-interval=0"}, []string{`--gc-interval must be an integer number of seconds in 1..`}},
		{[]string{"--debug=maybe"}, []string{`--debug must be a boolean (true or false), got "maybe"`}},
		{[]string{"--debug=yes"}, []string{`--debug must be a boolean`}}, // flags use Go's flag.Bool grammar
		{[]string{"--bogus"}, []string{"unknown flag --bogus"}},          // as typed (issue #23)
		{[]string{"--port"}, []string{"flag needs an argument: --port"}},
		{[]string{"serve"}, []string{`unexpected argument "serve"`}},
		{[]string{"--port=1", "--", "x"}, []string{`unexpected argument "x"`}},
		{[]string{"--debug", "false"}, []string{`unexpected argument "false"`, "--flag=false"}},
		{[]string{"--help=maybe"}, []string{`--help must be a boolean`}},
	}
	for _, tt := range tests {
		wantErr(t, tt.args, nil, tt.want...)
	}
}

func TestConfigErrorsAreJoined(t *testing.T) {
	msg := wantErr(t, []string{"--port=x"}, map[string]string{"DFLOCKD_MAX_LOCKS": "y", "DFLOCKD_TLS_CERT": "/c.pem"},
		"--port", "DFLOCKD_MAX_LOCKS", "DFLOCKD_TLS_CERT")
	if n := strings.Count(msg, "\n") + 1; n != 3 {
		t.Errorf("joined error has %d lines, want 3: %q", n, msg)
	}
}

func TestConfigDurationOverflow(t *testing.T) {
	const maxS = "9223372036" // MaxInt64 / 1e9
	cfg, _ := mustLoad(t, []string{"--read-timeout=" + maxS}, nil)
	if want := 9223372036 * time.Second; cfg.ReadTimeout != want || cfg.ReadTimeout <= 0 {
		t.Errorf("--read-timeout=%s: got %v, want %v", maxS, cfg.ReadTimeout, want)
	}
	cfg, _ = mustLoad(t, nil, map[string]string{"DFLOCKD_SHUTDOWN_TIMEOUT_S": maxS})
	if cfg.ShutdownTimeout != 9223372036*time.Second {
		t.Errorf("DFLOCKD_SHUTDOWN_TIMEOUT_S=%s: got %v", maxS, cfg.ShutdownTimeout)
	}
	for _, v := range []string{"9223372037", "9223372036854775807", "99999999999999999999"} {
		wantErr(t, []string{"--default-lease-ttl=" + v}, nil, "--default-lease-ttl", "1..9223372036", `"`+v+`"`)
		wantErr(t, nil, map[string]string{"DFLOCKD_GC_MAX_IDLE_S": v}, "DFLOCKD_GC_MAX_IDLE_S", "0..9223372036")
		wantErr(t, nil, map[string]string{"DFLOCKD_WRITE_TIMEOUT_S": v}, "DFLOCKD_WRITE_TIMEOUT_S")
	}
}

func TestConfigPortRange(t *testing.T) {
	for _, p := range []struct {
		text string
		want int
	}{{"0", 0}, {"1", 1}, {"6388", 6388}, {"65535", 65535}} {
		if cfg, _ := mustLoad(t, []string{"--port", p.text}, nil); cfg.Port != p.want {
			t.Errorf("--port %s: got %d", p.text, cfg.Port)
		}
		if cfg, _ := mustLoad(t, nil, map[string]string{"DFLOCKD_PORT": p.text}); cfg.Port != p.want {
			t.Errorf("DFLOCKD_PORT=%s: got %d", p.text, cfg.Port)
		}
	}
	for _, v := range []string{"65536", "-1", "100000"} {
		wantErr(t, []string{"--port=" + v}, nil, "--port must be an integer in 0..65535")
		wantErr(t, nil, map[string]string{"DFLOCKD_PORT": v}, "DFLOCKD_PORT must be an integer in 0..65535")
	}
}

func TestConfigOldGCAliases(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		vars     map[string]string
		interval time.Duration
		idle     time.Duration
		warnings []string
	}{
		{
			name:     "old names alone are used",
			vars:     map[string]string{"DFLOCKD_GC_LOOP_SLEEP": "9", "DFLOCKD_GC_MAX_UNUSED_TIME": "90"},
			interval: 9 * time.Second, idle: 90 * time.Second,
			warnings: []string{
				"DFLOCKD_GC_LOOP_SLEEP is deprecated; use DFLOCKD_GC_INTERVAL_S",
				"DFLOCKD_GC_MAX_UNUSED_TIME is deprecated; use DFLOCKD_GC_MAX_IDLE_S",
			},
		},
		{
			name: "canonical names win",
			vars: map[string]string{
				"DFLOCKD_GC_LOOP_SLEEP": "9", "DFLOCKD_GC_INTERVAL_S": "3",
				"DFLOCKD_GC_MAX_UNUSED_TIME": "90", "DFLOCKD_GC_MAX_IDLE_S": "30",
			},
			interval: 3 * time.Second, idle: 30 * time.Second,
			warnings: []string{
				"DFLOCKD_GC_LOOP_SLEEP is deprecated and ignored because DFLOCKD_GC_INTERVAL_S is set",
				"DFLOCKD_GC_MAX_UNUSED_TIME is deprecated and ignored because DFLOCKD_GC_MAX_IDLE_S is set",
			},
		},
		{
			name:     "flags win over old names",
			args:     []string{"--gc-interval=2", "--gc-max-idle=0"},
			vars:     map[string]string{"DFLOCKD_GC_LOOP_SLEEP": "9", "DFLOCKD_GC_MAX_UNUSED_TIME": "90"},
			interval: 2 * time.Second, idle: 0,
			warnings: []string{
				"DFLOCKD_GC_LOOP_SLEEP is deprecated and ignored because --gc-interval is set",
				"DFLOCKD_GC_MAX_UNUSED_TIME is deprecated and ignored because --gc-max-idle is set",
			},
		},
		{
			name:     "an ignored old name is not validated",
			vars:     map[string]string{"DFLOCKD_GC_LOOP_SLEEP": "junk", "DFLOCKD_GC_INTERVAL_S": "4"},
			interval: 4 * time.Second, idle: 60 * time.Second,
			warnings: []string{"DFLOCKD_GC_LOOP_SLEEP is deprecated and ignored"},
		},
		{
			name:     "canonical names alone warn nothing",
			vars:     map[string]string{"DFLOCKD_GC_INTERVAL_S": "4", "DFLOCKD_GC_MAX_IDLE_S": "5"},
			interval: 4 * time.Second, idle: 5 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, out := mustLoad(t, tt.args, tt.vars)
			if cfg.GCInterval != tt.interval || cfg.GCMaxIdle != tt.idle {
				t.Errorf("GCInterval, GCMaxIdle = %v, %v; want %v, %v", cfg.GCInterval, cfg.GCMaxIdle, tt.interval, tt.idle)
			}
			for _, w := range tt.warnings {
				if !strings.Contains(out, w) {
					t.Errorf("output %q lacks warning %q", out, w)
				}
			}
			if len(tt.warnings) == 0 && out != "" {
				t.Errorf("unexpected output %q", out)
			}
		})
	}
	wantErr(t, nil, map[string]string{"DFLOCKD_GC_LOOP_SLEEP": "0"}, `DFLOCKD_GC_LOOP_SLEEP must be an integer number of seconds in 1..`)
	wantErr(t, nil, map[string]string{"DFLOCKD_GC_MAX_UNUSED_TIME": "-1"}, `DFLOCKD_GC_MAX_UNUSED_TIME must be an integer number of seconds in 0..`)
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigAuthToken(t *testing.T) {
	fileA := writeFile(t, "a", "  from-flag-file\n")
	fileB := writeFile(t, "b", "from-env-file\r\n")
	empty := writeFile(t, "empty", "")
	blank := writeFile(t, "blank", " \n\t\n")
	multi := writeFile(t, "multi", "line1\nline2\n")
	cr := writeFile(t, "cr", "to\rken")
	longest := strings.Repeat("k", parse.MaxAuthLine)
	atCap := writeFile(t, "cap", longest+"\n")
	overCap := writeFile(t, "over", "sekrit"+longest+"\n")
	huge := writeFile(t, "huge", strings.Repeat(" ", maxTokenFile)+"k")
	missing := filepath.Join(t.TempDir(), "missing")
	dir := t.TempDir()

	ok := []struct {
		name string
		args []string
		vars map[string]string
		want string
	}{
		{"none", nil, nil, ""},
		{"flag beats all", []string{"--auth-token", " flag "}, map[string]string{"DFLOCKD_AUTH_TOKEN": "env", "DFLOCKD_AUTH_TOKEN_FILE": fileB}, "flag"},
		{"flag beats flag file", []string{"--auth-token-file", fileA, "--auth-token=flag"}, nil, "flag"},
		{"flag file beats env", []string{"--auth-token-file=" + fileA}, map[string]string{"DFLOCKD_AUTH_TOKEN": "env", "DFLOCKD_AUTH_TOKEN_FILE": fileB}, "from-flag-file"},
		{"env beats env file", nil, map[string]string{"DFLOCKD_AUTH_TOKEN": "\tenv\n", "DFLOCKD_AUTH_TOKEN_FILE": fileB}, "env"},
		{"env file last", nil, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": fileB}, "from-env-file"},
		{"empty env token is unset", nil, map[string]string{"DFLOCKD_AUTH_TOKEN": "", "DFLOCKD_AUTH_TOKEN_FILE": fileB}, "from-env-file"},
		{"lower sources are not read", []string{"--auth-token=x"}, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": missing}, "x"},
		{"token with inner space", []string{"--auth-token=a b"}, nil, "a b"},
		{"64 KiB token file", []string{"--auth-token-file", atCap}, nil, longest},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			if cfg, _ := mustLoad(t, tt.args, tt.vars); cfg.AuthToken != tt.want {
				t.Errorf("AuthToken = %q, want %q", cfg.AuthToken, tt.want)
			}
		})
	}

	bad := []struct {
		name string
		args []string
		vars map[string]string
		want []string
	}{
		{"explicit empty flag", []string{"--auth-token="}, nil, []string{"--auth-token is empty"}},
		{"blank flag", []string{"--auth-token", "   "}, map[string]string{"DFLOCKD_AUTH_TOKEN": "env"}, []string{"--auth-token is empty"}},
		{"blank env", nil, map[string]string{"DFLOCKD_AUTH_TOKEN": " \t"}, []string{"DFLOCKD_AUTH_TOKEN is empty"}},
		{"empty flag file", []string{"--auth-token-file", empty}, nil, []string{"--auth-token-file", empty, "is empty"}},
		{"blank env file", nil, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": blank}, []string{"DFLOCKD_AUTH_TOKEN_FILE", blank, "is empty"}},
		{"empty file path", []string{"--auth-token-file="}, nil, []string{"--auth-token-file must name a file"}},
		{"missing flag file", []string{"--auth-token-file", missing}, nil, []string{"--auth-token-file", "cannot read", missing, "no such file"}},
		{"missing env file", nil, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": missing}, []string{"DFLOCKD_AUTH_TOKEN_FILE", missing}},
		{"directory", []string{"--auth-token-file", dir}, nil, []string{"--auth-token-file", "cannot read", dir}},
		{"LF in file", []string{"--auth-token-file", multi}, nil, []string{"--auth-token-file", multi, "line break"}},
		{"CR in file", nil, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": cr}, []string{"DFLOCKD_AUTH_TOKEN_FILE", "line break"}},
		{"LF in flag", []string{"--auth-token", "sekrit\nX"}, nil, []string{"--auth-token contains a line break"}},
		{"CR in env", nil, map[string]string{"DFLOCKD_AUTH_TOKEN": "sekrit\rX"}, []string{"DFLOCKD_AUTH_TOKEN contains a line break"}},
		// A token longer than an auth line can carry matches no client.
		{"token file over 64 KiB", []string{"--auth-token-file", overCap}, nil, []string{"--auth-token-file", overCap, "65542 bytes", "at most 65536", "no client could match"}},
		{"token flag over 64 KiB", []string{"--auth-token", "sekrit" + longest}, nil, []string{"--auth-token is 65542 bytes"}},
		{"token file over 1 MiB", nil, map[string]string{"DFLOCKD_AUTH_TOKEN_FILE": huge}, []string{"DFLOCKD_AUTH_TOKEN_FILE", huge, "over 1048576 bytes"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			msg := wantErr(t, tt.args, tt.vars, tt.want...)
			for _, secret := range []string{"line1", "sekrit", "to\rken"} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q echoes the token", msg)
				}
			}
		})
	}
}

// unsupported lists, independently of the implementation's table, the
// dflockd flags whose feature dflockd-ng lacks (spec §E.2).
var unsupported = []struct{ flag, env string }{}

func TestConfigUnsupportedRefused(t *testing.T) {
	if len(unsupported) != len(unsupportedFlags) {
		t.Errorf("implementation refuses %d flags, test expects %d", len(unsupportedFlags), len(unsupported))
	}
	for _, u := range unsupported {
		t.Run(u.flag, func(t *testing.T) {
			// "1" is a live value for every one of them: a port, a cap, a
			// true boolean, a file or address named "1".
			wantErr(t, []string{"--" + u.flag + "=1"}, nil, "--"+u.flag+": ", "not supported by dflockd-ng yet")
			wantErr(t, nil, map[string]string{u.env: "1"}, u.env+": ", "not supported by dflockd-ng yet")
			// Settings of other flags do not hide the refusal.
			args := []string{"--port=7000", "-" + u.flag, "1", "--debug"}
			if u.flag == "cluster-bootstrap" { // a boolean takes no separate value
				args = []string{"--port=7000", "-" + u.flag, "--debug"}
			}
			wantErr(t, args, nil, "--"+u.flag+": ")
			// Empty leaves the feature off everywhere.
			mustLoad(t, []string{"--" + u.flag + "="}, map[string]string{u.env: ""})
		})
	}
	wantErr(t, []string{"--log-format=xml"}, nil, "--log-format must be one of text, json")
	// Orphans are a cluster feature: on a single node stable-ref is inert.
	wantErr(t, []string{"--orphan-ttl", "30"}, nil, "--orphan-ttl needs --raft-dir")
	wantErr(t, nil, map[string]string{"DFLOCKD_ORPHAN_TTL_S": "30"}, "--orphan-ttl needs --raft-dir")
	wantErr(t, []string{"--orphan-ttl", "-1"}, nil, "--orphan-ttl must be an integer number of seconds")
	// Secrets are not echoed.
	msg := wantErr(t, []string{"--admin-token=hunter2\x01"}, nil, "--admin-token")
	if strings.Contains(msg, "hunter") {
		t.Errorf("error %q echoes a secret", msg)
	}
}

// The certificate and its key come together, from flags, variables or
// one of each (spec §D.2); the message names what was given.
func TestConfigTLS(t *testing.T) {
	cfg, _ := mustLoad(t, []string{"--tls-cert", "/etc/c.pem", "--tls-key=/etc/k.pem"}, nil)
	if cfg.TLSCert != "/etc/c.pem" || cfg.TLSKey != "/etc/k.pem" {
		t.Errorf("flags: cert %q key %q", cfg.TLSCert, cfg.TLSKey)
	}
	cfg, _ = mustLoad(t, []string{"--tls-cert", "/etc/c.pem"}, map[string]string{"DFLOCKD_TLS_KEY": "/etc/k.pem", "DFLOCKD_TLS_CERT": "/other.pem"})
	if cfg.TLSCert != "/etc/c.pem" || cfg.TLSKey != "/etc/k.pem" {
		t.Errorf("flag and variable: cert %q key %q", cfg.TLSCert, cfg.TLSKey)
	}
	wantErr(t, []string{"--tls-cert", "/etc/c.pem"}, nil,
		"--tls-cert is set but --tls-key (DFLOCKD_TLS_KEY) is not: TLS needs the certificate and its private key")
	wantErr(t, nil, map[string]string{"DFLOCKD_TLS_KEY": "/etc/k.pem"},
		"DFLOCKD_TLS_KEY is set but --tls-cert (DFLOCKD_TLS_CERT) is not")
	wantErr(t, []string{"--tls-key=/etc/k.pem", "--tls-cert="}, map[string]string{"DFLOCKD_TLS_CERT": ""},
		"--tls-key is set but --tls-cert")
}

func TestConfigUnsupportedHarmlessValues(t *testing.T) {
	tests := []struct {
		args []string
		vars map[string]string
	}{
		{[]string{"--http-port=0"}, nil},
		{[]string{"--http-port", "0"}, nil},
		{nil, map[string]string{"DFLOCKD_HTTP_PORT": "0"}},
		{[]string{"--orphan-ttl", "0"}, nil},
		{nil, map[string]string{"DFLOCKD_ORPHAN_TTL_S": "0"}},
		{[]string{"--http-max-sessions=0", "--http-max-sessions-per-ip=0", "--http-max-connections-per-ip=0"}, nil},
		{[]string{"--http-rate-limit-per-ip=0", "--http-rate-limit-burst=0"}, nil},
		{[]string{"--cluster-bootstrap=false"}, map[string]string{"DFLOCKD_CLUSTER_BOOTSTRAP": "no"}},
		{[]string{"--tls-cert=", "--tls-key="}, map[string]string{"DFLOCKD_TLS_CERT": "", "DFLOCKD_RAFT_DIR": ""}},
	}
	for _, tt := range tests {
		cfg, _ := mustLoad(t, tt.args, tt.vars)
		if cfg != DefaultConfig() {
			t.Errorf("%q %v: got %+v, want defaults", tt.args, tt.vars, cfg)
		}
	}
}

func TestConfigNoAutoReleaseAlias(t *testing.T) {
	tests := []struct {
		args []string
		vars map[string]string
		want bool
	}{
		{[]string{"--no-auto-release-on-disconnect"}, nil, false},
		{[]string{"-no-auto-release-on-disconnect"}, nil, false},
		{[]string{"--no-auto-release-on-disconnect"}, map[string]string{"DFLOCKD_AUTO_RELEASE_ON_DISCONNECT": "true"}, false},
		{[]string{"--no-auto-release-on-disconnect=false"}, map[string]string{"DFLOCKD_AUTO_RELEASE_ON_DISCONNECT": "false"}, true},
		{[]string{"--no-auto-release-on-disconnect", "--auto-release-on-disconnect=false"}, nil, false},
		{nil, map[string]string{"DFLOCKD_AUTO_RELEASE_ON_DISCONNECT": "0"}, false},
	}
	for _, tt := range tests {
		if cfg, _ := mustLoad(t, tt.args, tt.vars); cfg.AutoReleaseOnDisconnect != tt.want {
			t.Errorf("%q %v: AutoReleaseOnDisconnect = %v, want %v", tt.args, tt.vars, cfg.AutoReleaseOnDisconnect, tt.want)
		}
	}
	wantErr(t, []string{"--auto-release-on-disconnect", "--no-auto-release-on-disconnect"}, nil,
		"--no-auto-release-on-disconnect contradicts --auto-release-on-disconnect=true")
	wantErr(t, []string{"--no-auto-release-on-disconnect=maybe"}, nil, "--no-auto-release-on-disconnect must be a boolean")
}

func TestConfigCompat(t *testing.T) {
	for _, tt := range []struct {
		args []string
		vars map[string]string
	}{
		{[]string{"--compat=v2"}, nil},
		{[]string{"--compat", "V2"}, nil},
		{nil, map[string]string{"DFLOCKD_COMPAT": "v2"}},
	} {
		if cfg, _ := mustLoad(t, tt.args, tt.vars); cfg.Compat != "v2" {
			t.Errorf("%q %v: Compat = %q, want v2", tt.args, tt.vars, cfg.Compat)
		}
	}
	for _, tt := range []struct {
		args []string
		vars map[string]string
	}{
		{[]string{"--compat=rf"}, nil},
		{[]string{"--compat", "RF"}, map[string]string{"DFLOCKD_COMPAT": "v2"}},
		{nil, map[string]string{"DFLOCKD_COMPAT": "rf"}},
	} {
		if cfg, _ := mustLoad(t, tt.args, tt.vars); cfg.Compat != "rf" {
			t.Errorf("%q %v: Compat = %q, want rf", tt.args, tt.vars, cfg.Compat)
		}
	}
	for _, tt := range []struct {
		args []string
		vars map[string]string
	}{
		{[]string{"--compat=v1"}, nil},
		{[]string{"--compat", "V1"}, map[string]string{"DFLOCKD_COMPAT": "rf"}},
		{nil, map[string]string{"DFLOCKD_COMPAT": "v1"}},
	} {
		if cfg, _ := mustLoad(t, tt.args, tt.vars); cfg.Compat != "v1" {
			t.Errorf("%q %v: Compat = %q, want v1", tt.args, tt.vars, cfg.Compat)
		}
	}
	wantErr(t, []string{"--compat=bogus"}, nil, `--compat must be v2, v1 or rf`, `got "bogus"`)
	wantErr(t, []string{"--compat="}, nil, `--compat must be v2, v1 or rf`)
	wantErr(t, nil, map[string]string{"DFLOCKD_COMPAT": "v3"}, `DFLOCKD_COMPAT must be v2, v1 or rf`, `got "v3"`)
}

// Under --compat=v1 the configuration rules of dflockd v1.10 apply (spec
// §E.1): invalid environment values are ignored with a warning, the auth
// token from the environment wins over the flag, --gc-max-idle must be > 0.
func TestConfigCompatV1Rules(t *testing.T) {
	bad := map[string]string{"DFLOCKD_COMPAT": "v1", "DFLOCKD_PORT": "sixty", "DFLOCKD_DEBUG": "on", "DFLOCKD_MAX_LOCKS": "-3"}
	cfg, out := mustLoad(t, nil, bad)
	if cfg.Port != 6388 || cfg.Debug || cfg.MaxLocks != 1024 {
		t.Errorf("invalid env values not ignored: port %d debug %v max-locks %d", cfg.Port, cfg.Debug, cfg.MaxLocks)
	}
	for _, name := range []string{"DFLOCKD_PORT", "DFLOCKD_DEBUG", "DFLOCKD_MAX_LOCKS"} {
		if !strings.Contains(out, "warning: "+name) || !strings.Contains(out, "ignored") {
			t.Errorf("no warning for %s in %q", name, out)
		}
	}
	// The same values stop a v2 server, and an invalid flag stops v1 too.
	delete(bad, "DFLOCKD_COMPAT")
	wantErr(t, nil, bad, "DFLOCKD_PORT must be an integer")
	wantErr(t, []string{"--compat=v1", "--port=sixty"}, nil, "--port must be an integer")
	// A valid env value still counts under v1.
	if cfg, _ := mustLoad(t, []string{"--compat=v1"}, map[string]string{"DFLOCKD_PORT": "7000"}); cfg.Port != 7000 {
		t.Errorf("DFLOCKD_PORT=7000 under v1: port %d", cfg.Port)
	}

	both := map[string]string{"DFLOCKD_AUTH_TOKEN": "from-env"}
	if cfg, _ := mustLoad(t, []string{"--compat=v1", "--auth-token=from-flag"}, both); cfg.AuthToken != "from-env" {
		t.Errorf("v1 auth token = %q, want the environment's", cfg.AuthToken)
	}
	if cfg, _ := mustLoad(t, []string{"--auth-token=from-flag"}, both); cfg.AuthToken != "from-flag" {
		t.Errorf("v2 auth token = %q, want the flag's", cfg.AuthToken)
	}

	wantErr(t, []string{"--compat=v1", "--gc-max-idle=0"}, nil, "--gc-max-idle must be > 0 under --compat=v1")
	if cfg, _ := mustLoad(t, []string{"--gc-max-idle=0"}, nil); cfg.GCMaxIdle != 0 {
		t.Errorf("v2 --gc-max-idle=0: %v", cfg.GCMaxIdle)
	}
}

func TestConfigHelpAndVersion(t *testing.T) {
	badEnv := map[string]string{"DFLOCKD_PORT": "abc", "DFLOCKD_TLS_CERT": "/c.pem"}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"--h"}, {"--port=1", "--help"}} {
		cfg, out := mustLoad(t, args, badEnv) // help works whatever the environment
		if !cfg.ShowHelp || cfg.ShowVersion {
			t.Errorf("%q: ShowHelp, ShowVersion = %v, %v; want true, false", args, cfg.ShowHelp, cfg.ShowVersion)
		}
		if out != "" {
			t.Errorf("%q: LoadConfig wrote %.40q (main prints the help)", args, out)
		}
	}
	cfg, out := mustLoad(t, []string{"--version"}, badEnv)
	if !cfg.ShowVersion || cfg.ShowHelp || out != "" {
		t.Errorf("--version: ShowVersion=%v ShowHelp=%v output=%q", cfg.ShowVersion, cfg.ShowHelp, out)
	}
	cfg, _ = mustLoad(t, []string{"--help=false", "--version=false"}, nil)
	if cfg != DefaultConfig() {
		t.Errorf("--help=false --version=false: got %+v, want defaults", cfg)
	}
	// Flag errors still come first.
	wantErr(t, []string{"--help", "--bogus"}, nil, "-bogus")
}

func TestConfigHelpText(t *testing.T) {
	var out bytes.Buffer
	writeUsage(&out)
	lines := strings.Split(out.String(), "\n")
	// row finds the table line of a flag; its columns are flag (+ placeholder), env, default.
	row := func(flag string) []string {
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) > 0 && f[0] == flag {
				return f
			}
		}
		t.Errorf("help has no line for %s:\n%s", flag, out.String())
		return nil
	}
	tests := []struct{ flag, env, def string }{
		{"--host", "DFLOCKD_HOST", "127.0.0.1"},
		{"--port", "DFLOCKD_PORT", "6388"},
		{"--godistlock-port", "DFLOCKD_GODISTLOCK_PORT", "0"},
		{"--default-lease-ttl", "DFLOCKD_DEFAULT_LEASE_TTL_S", "33"},
		{"--lease-sweep-interval", "DFLOCKD_LEASE_SWEEP_INTERVAL_S", "1"},
		{"--gc-interval", "DFLOCKD_GC_INTERVAL_S", "5"},
		{"--gc-max-idle", "DFLOCKD_GC_MAX_IDLE_S", "60"},
		{"--read-timeout", "DFLOCKD_READ_TIMEOUT_S", "23"},
		{"--write-timeout", "DFLOCKD_WRITE_TIMEOUT_S", "5"},
		{"--shutdown-timeout", "DFLOCKD_SHUTDOWN_TIMEOUT_S", "30"},
		{"--max-locks", "DFLOCKD_MAX_LOCKS", "1024"},
		{"--max-connections", "DFLOCKD_MAX_CONNECTIONS", "0"},
		{"--max-waiters", "DFLOCKD_MAX_WAITERS", "0"},
		{"--max-keys", "DFLOCKD_MAX_KEYS", "0"},
		{"--max-list-length", "DFLOCKD_MAX_LIST_LENGTH", "0"},
		{"--max-subscriptions", "DFLOCKD_MAX_SUBSCRIPTIONS", "0"},
		{"--auto-release-on-disconnect", "DFLOCKD_AUTO_RELEASE_ON_DISCONNECT", "true"},
		{"--no-auto-release-on-disconnect", "-", "-"},
		{"--fence-state-file", "DFLOCKD_FENCE_STATE_FILE", "unset"},
		{"--compat", "DFLOCKD_COMPAT", "v2"},
		{"--loops", "DFLOCKD_LOOPS", "0"},
		{"--debug", "DFLOCKD_DEBUG", "false"},
		{"--cpu-profile", "DFLOCKD_CPU_PROFILE", "unset"},
		{"--auth-token", "DFLOCKD_AUTH_TOKEN", "unset"},
		{"--auth-token-file", "DFLOCKD_AUTH_TOKEN_FILE", "unset"},
		{"--http-port", "DFLOCKD_HTTP_PORT", "0"},
		{"--http-host", "DFLOCKD_HTTP_HOST", "--host"},
		{"--http-body-timeout", "DFLOCKD_HTTP_BODY_TIMEOUT_S", "10"},
		{"--http-session-idle-timeout", "DFLOCKD_HTTP_SESSION_IDLE_S", "20"},
		{"--http-max-sessions", "DFLOCKD_HTTP_MAX_SESSIONS", "0"},
		{"--http-max-sessions-per-ip", "DFLOCKD_HTTP_MAX_SESSIONS_PER_IP", "0"},
		{"--http-max-connections-per-ip", "DFLOCKD_HTTP_MAX_CONNECTIONS_PER_IP", "0"},
		{"--http-max-streams-per-ip", "DFLOCKD_HTTP_MAX_STREAMS_PER_IP", "8"},
		{"--http-rate-limit-per-ip", "DFLOCKD_HTTP_RATE_LIMIT_PER_IP", "0"},
		{"--http-rate-limit-burst", "DFLOCKD_HTTP_RATE_LIMIT_BURST", "0"},
		{"--http-cors-allowed-origins", "DFLOCKD_HTTP_CORS_ALLOWED_ORIGINS", "unset"},
		{"--version", "-", "-"},
	}
	for _, tt := range tests {
		f := row(tt.flag)
		if f == nil {
			continue
		}
		i := 1
		if i < len(f) && strings.ToUpper(f[i]) == f[i] && !strings.HasPrefix(f[i], "DFLOCKD_") && f[i] != "-" {
			i++ // skip the value placeholder
		}
		if len(f) < i+2 || f[i] != tt.env || f[i+1] != tt.def {
			t.Errorf("help line for %s = %q, want env %s and default %s", tt.flag, f, tt.env, tt.def)
		}
	}
	for _, u := range unsupported {
		if f := row("--" + u.flag); f != nil && !strings.Contains(strings.Join(f, " "), u.env) {
			t.Errorf("help line for --%s lacks %s", u.flag, u.env)
		}
	}
	if row("-h,") == nil {
		t.Errorf("help lacks -h")
	}
	for _, l := range lines {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("help line has trailing space: %q", l)
		}
	}
}

func TestConfigGodistlockPort(t *testing.T) {
	if cfg, _ := mustLoad(t, []string{"--godistlock-port=65535"}, nil); cfg.GodistlockPort != 65535 {
		t.Errorf("--godistlock-port=65535: got %d", cfg.GodistlockPort)
	}
	if cfg, _ := mustLoad(t, []string{"--godistlock-port=0"}, map[string]string{"DFLOCKD_GODISTLOCK_PORT": "7001"}); cfg.GodistlockPort != 0 {
		t.Errorf("the flag must beat the variable: got %d", cfg.GodistlockPort)
	}
	// 0 (off) combines with anything.
	if cfg, _ := mustLoad(t, []string{"--auth-token=x", "--port=0"}, nil); cfg.GodistlockPort != 0 {
		t.Errorf("default GodistlockPort = %d", cfg.GodistlockPort)
	}
	wantErr(t, []string{"--godistlock-port=65536"}, nil, "--godistlock-port must be an integer in 0..65535")
	wantErr(t, nil, map[string]string{"DFLOCKD_GODISTLOCK_PORT": "-1"}, "DFLOCKD_GODISTLOCK_PORT must be an integer in 0..65535")
	wantErr(t, []string{"--godistlock-port=6388"}, nil, "must differ from --port")
	wantErr(t, []string{"--port=7000"}, map[string]string{"DFLOCKD_GODISTLOCK_PORT": "7000"}, "must differ from --port")
	wantErr(t, []string{"--godistlock-port=7001", "--auth-token=x"}, nil, "cannot be combined with an auth token")
	wantErr(t, nil, map[string]string{"DFLOCKD_GODISTLOCK_PORT": "7001", "DFLOCKD_AUTH_TOKEN": "x"}, "no authentication")
}

// TestConfigCluster: the cluster settings of spec §E.2 (V2C), what they
// need together, and the raft token's sources.
func TestConfigCluster(t *testing.T) {
	token := strings.Repeat("t", 32)
	peers := "n1=127.0.0.1:7001@127.0.0.1:6388,n2=127.0.0.1:7002@127.0.0.1:6389"
	base := []string{"--raft-dir", "/var/lib/dflockd", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", peers}
	cfg, _ := mustLoad(t, append(base, "--raft-auth-token", token, "--cluster-bootstrap"), nil)
	c := cfg.Cluster
	if c.RaftDir != "/var/lib/dflockd" || c.NodeID != "n1" || c.RaftAddr != "127.0.0.1:7001" || c.Peers != peers ||
		!c.Bootstrap || c.RaftToken != token {
		t.Fatalf("cluster settings: %+v", c)
	}
	cfg, _ = mustLoad(t, nil, map[string]string{"DFLOCKD_RAFT_DIR": "/d", "DFLOCKD_NODE_ID": "n2",
		"DFLOCKD_RAFT_ADDR": "127.0.0.1:7002", "DFLOCKD_CLUSTER_PEERS": peers, "DFLOCKD_RAFT_AUTH_TOKEN": token,
		"DFLOCKD_ADVERTISE_ADDR": "db2:6389"})
	if cfg.Cluster.NodeID != "n2" || cfg.Cluster.AdvertiseAddr != "db2:6389" {
		t.Fatalf("from the environment: %+v", cfg.Cluster)
	}
	// The gnet loops serve a member's clients unless told otherwise.
	if !cfg.Cluster.Loops {
		t.Fatal("--cluster-loops is off by default")
	}
	if cfg, _ = mustLoad(t, append(base, "--raft-auth-token", token, "--cluster-loops=false"), nil); cfg.Cluster.Loops {
		t.Fatal("--cluster-loops=false left the loops on")
	}
	cfg, _ = mustLoad(t, append(base, "--raft-auth-token", token), map[string]string{"DFLOCKD_CLUSTER_LOOPS": "false"})
	if cfg.Cluster.Loops {
		t.Fatal("DFLOCKD_CLUSTER_LOOPS=false left the loops on")
	}
	file := filepath.Join(t.TempDir(), "raft-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, _ = mustLoad(t, append(base, "--raft-auth-token-file", file), nil); cfg.Cluster.RaftToken != token {
		t.Fatalf("token from a file: %q", cfg.Cluster.RaftToken)
	}

	wantErr(t, append(base, "--raft-auth-token", "short"), nil, "--raft-auth-token", "at least 32 bytes")
	wantErr(t, base, nil, "--raft-auth-token", "required")
	wantErr(t, append(base, "--raft-auth-token-file", file+".missing"), nil, "--raft-auth-token-file")
	wantErr(t, []string{"--raft-dir", "/d", "--raft-auth-token", token}, nil,
		"--node-id is required", "--raft-addr is required", "--cluster-peers")
	wantErr(t, []string{"--raft-dir", "/d", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", "n2=a:1@b:2", "--raft-auth-token", token}, nil,
		"does not list --node-id")
	wantErr(t, append(base, "--raft-auth-token", token, "--raft-tls-cert", "c.pem"), nil, "all or none")
	// The godistlock listener is served on members too (through the log).
	if cfg, _ := mustLoad(t, append(base, "--raft-auth-token", token, "--godistlock-port", "7777"), nil); cfg.GodistlockPort != 7777 {
		t.Fatalf("--godistlock-port in cluster mode: %d", cfg.GodistlockPort)
	}
	wantErr(t, []string{"--node-id", "n1"}, nil, "need --raft-dir")
	wantErr(t, []string{"--cluster-bootstrap"}, nil, "need --raft-dir")
	msg := wantErr(t, append(base, "--raft-auth-token", "hunter2"), nil, "at least 32 bytes")
	if strings.Contains(msg, "hunter") {
		t.Errorf("error %q echoes the raft token", msg)
	}
}

// TestConfigHTTP: the HTTP API's settings (spec §E.2) and what they may
// not be combined with: another listener's port, and cluster mode.
func TestConfigHTTP(t *testing.T) {
	cfg, _ := mustLoad(t, []string{"--http-port", "6389", "--http-cors-allowed-origins", " https://a.example ,, * "},
		map[string]string{"DFLOCKD_HTTP_HOST": "0.0.0.0", "DFLOCKD_HTTP_PORT": "7000"})
	if cfg.HTTP.Port != 6389 || cfg.HTTP.Host != "0.0.0.0" || cfg.HTTP.SessionIdleTimeout != 20*time.Second {
		t.Errorf("HTTP settings: %+v", cfg.HTTP)
	}
	if got := corsOrigins(cfg.HTTP.CORSAllowedOrigins); strings.Join(got, "|") != "https://a.example|*" {
		t.Errorf("CORS origins %q, want [https://a.example *]", got)
	}
	if got := corsOrigins(""); got != nil {
		t.Errorf("no CORS origins: %q", got)
	}
	if got := httpAddr(cfg); got != "0.0.0.0:6389" {
		t.Errorf("HTTP address %q with --http-host", got)
	}
	cfg, _ = mustLoad(t, []string{"--host", "::1", "--http-port", "6389"}, nil)
	if got := httpAddr(cfg); got != "[::1]:6389" {
		t.Errorf("HTTP address %q without --http-host, want --host's", got)
	}
	// 0 is accepted, as by dflockd v2, and means the default.
	if cfg, _ = mustLoad(t, []string{"--http-session-idle-timeout=0"}, nil); cfg.HTTP.SessionIdleTimeout != 0 {
		t.Errorf("--http-session-idle-timeout=0: %v", cfg.HTTP.SessionIdleTimeout)
	}
	// Off, the other settings are inert and combine with anything.
	mustLoad(t, []string{"--http-port=0", "--http-host=x", "--raft-dir="}, nil)

	wantErr(t, []string{"--http-port=65536"}, nil, "--http-port must be an integer in 0..65535")
	wantErr(t, nil, map[string]string{"DFLOCKD_HTTP_PORT": "http"}, "DFLOCKD_HTTP_PORT must be an integer in 0..65535")
	wantErr(t, []string{"--http-session-idle-timeout=-1"}, nil, "--http-session-idle-timeout must be an integer number of seconds in 0..9223372036")
	wantErr(t, []string{"--http-body-timeout=0"}, nil, "--http-body-timeout must be an integer number of seconds in 1..9223372036")
	wantErr(t, []string{"--http-max-sessions=-1"}, nil, "--http-max-sessions must be an integer >= 0")
	// Integers, as dflockd v2's flag.Int.
	wantErr(t, []string{"--http-rate-limit-per-ip=0.5"}, nil, "--http-rate-limit-per-ip must be an integer >= 0")
	wantErr(t, nil, map[string]string{"DFLOCKD_HTTP_RATE_LIMIT_BURST": "-2"}, "DFLOCKD_HTTP_RATE_LIMIT_BURST must be an integer >= 0")

	wantErr(t, []string{"--http-port=6388"}, nil, "--http-port (DFLOCKD_HTTP_PORT) must differ from --port (DFLOCKD_PORT)")
	wantErr(t, []string{"--port=7000"}, map[string]string{"DFLOCKD_HTTP_PORT": "7000"}, "must differ from --port")
	wantErr(t, []string{"--godistlock-port=7001", "--http-port=7001"}, nil, "must differ from --godistlock-port")

	token := strings.Repeat("t", 32)
	cluster := []string{"--raft-dir", "/var/lib/dflockd", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", "n1=127.0.0.1:7001@127.0.0.1:6388", "--raft-auth-token", token}
	mustLoad(t, cluster, nil)
	// Cluster members serve it too (http_cluster.go).
	if cfg, _ := mustLoad(t, append(cluster, "--http-port", "6389"), nil); cfg.HTTP.Port != 6389 {
		t.Errorf("--http-port in cluster mode: %+v", cfg.HTTP)
	}
}

// --help fits the width it is given: a terminal's, or 100 columns; below
// the three columns' width, a flag's variable and default go under it.
func TestConfigHelpFitsWidth(t *testing.T) {
	for _, width := range []int{80, 100, 132} {
		var out bytes.Buffer
		writeUsageWidth(&out, width)
		for i, l := range strings.Split(out.String(), "\n") {
			if len(l) > width {
				t.Errorf("width %d: line %d has %d columns: %q", width, i+1, len(l), l)
			}
		}
		if !strings.Contains(out.String(), "--policy-file FILE") || !strings.Contains(out.String(), "DFLOCKD_POLICY_FILE") {
			t.Errorf("width %d: a flag or its variable is missing", width)
		}
	}
	var narrow bytes.Buffer
	writeUsageWidth(&narrow, 80)
	if !strings.Contains(narrow.String(), "  --port PORT\n        DFLOCKD_PORT, default 6388\n        TCP port, 0..65535\n") {
		t.Errorf("at 80 columns, --port is not laid out under itself:\n%s", narrow.String())
	}
}
