package main

// Configuration of the dflockd binary: every flag and DFLOCKD_* environment
// variable of dflockd v2 (spec §E.2) with the same defaults, resolved as
// explicit flag > environment > default (spec §E.1, v1.16/V2 row, and §I.9).
//
// The flag and variable names, defaults and ranges live in one table
// (settingGroups, flagtable.go) that drives parsing, validation, the --help
// text and the shell completion alike, so they cannot drift apart. The
// command line is read by scanFlags (flagparse.go). LoadConfig is a pure
// function of its arguments apart from reading an auth token file; it
// keeps no state.
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
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/policy"
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
	// TLSClientCA: --tls-client-ca, DFLOCKD_TLS_CLIENT_CA: the CAs of
	// client certificates (mutual TLS); needs TLS.
	TLSClientCA string

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
	CPUProfile              string // --cpu-profile, DFLOCKD_CPU_PROFILE: Go CPU profile of the whole run ("" = none)

	AuthToken string // resolved token (see resolveAuthToken); "" = auth off
	// PolicyFile: --policy-file, DFLOCKD_POLICY_FILE; Policy is what it
	// holds, read by LoadConfig (policy.go).
	PolicyFile     string
	Policy         *policy.Policy
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
		HTTP:                    HTTPConfig{SessionIdleTimeout: 20 * time.Second, SSEPingInterval: 15 * time.Second, BodyTimeout: 10 * time.Second, MaxStreamsPerIP: 8},
		Cluster:                 ClusterConfig{Loops: true},
	}
}

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

	values, rest, err := scanFlags(args, knownFlag)
	if err != nil {
		return Config{}, err
	}
	cli := func(name string) (source, bool) {
		text, ok := values[name]
		if !ok {
			return source{}, false
		}
		return source{name: "--" + name, text: text}, true
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

	if len(rest) > 0 {
		a := rest[0]
		msg := fmt.Sprintf("unexpected argument %q: dflockd takes only flags", a)
		if _, err := strconv.ParseBool(a); err == nil {
			msg += " (write a boolean flag as --flag=" + a + ")"
		} else if findCommand(a) != nil {
			msg += " (a command comes first: dflockd " + a + ")"
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
	if err := loadPolicy(&cfg); err != nil {
		errs = append(errs, err)
	}
	if err := checkGodistlock(&cfg); err != nil {
		errs = append(errs, err)
	}
	if err := checkTLS(&cfg, cli, env); err != nil {
		errs = append(errs, err)
	}
	if err := checkHTTP(&cfg); err != nil {
		errs = append(errs, err)
	}
	if err := resolveMetricsToken(&cfg.HTTP); err != nil { // metricsauth.go
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
