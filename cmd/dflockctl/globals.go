package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/client"
)

// Server defaults, shared with the server's own configuration.
const (
	defaultHost = "127.0.0.1"
	defaultPort = "6388"

	envHost          = "DFLOCKD_HOST"
	envPort          = "DFLOCKD_PORT"
	envAuthToken     = "DFLOCKD_AUTH_TOKEN"
	envAuthTokenFile = "DFLOCKD_AUTH_TOKEN_FILE"

	// replyTimeout gives up a server that accepted a request but does not
	// answer it, beyond the time the request may block by design.
	replyTimeout = 10 * time.Second
)

// globals are the options every server command accepts, before or after
// its name: the same struct is registered with the top-level flag set and
// with the command's own, so a later occurrence overrides an earlier one.
type globals struct {
	server, token, tokenFile              string
	host, port                            string // -h, -p: redis-cli's spelling of the server
	endpoints                             string // --endpoints: etcdctl's
	stableRef                             string // --stable-ref: the connection's identity in a cluster
	http                                  string // --http: the server's HTTP API, for the commands that use it
	cluster, json                         bool
	tls, tlsInsecure                      bool
	tlsCA, tlsCert, tlsKey, tlsServerName string
}

// register adds the options to fs with their current values as defaults:
// flag's *Var functions store the default, which must not undo an option
// given before the command's name.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.server, "server", g.server, "server `HOST:PORT`, or a comma list (default $"+envHost+":$"+envPort+", else "+defaultHost+":"+defaultPort+")")
	fs.StringVar(&g.host, "h", g.host, "server `HOST`, as redis-cli's -h (default $"+envHost+", else "+defaultHost+"); -h alone prints help")
	fs.StringVar(&g.port, "p", g.port, "server `PORT`, as redis-cli's -p (default $"+envPort+", else "+defaultPort+")")
	fs.StringVar(&g.endpoints, "endpoints", g.endpoints, "servers `HOST:PORT[,...]`, as etcdctl's: the first that answers serves every key; with --cluster, one cluster's members")
	fs.BoolVar(&g.cluster, "cluster", g.cluster, "the servers are members of one cluster: follow not-leader redirects among them, wait for a leader in a failover")
	fs.StringVar(&g.stableRef, "stable-ref", g.stableRef, "send stable-ref `REF` first on every connection: a cluster with --orphan-ttl hands a closed connection's locks and queue places to the next that presents it")
	fs.StringVar(&g.token, "auth-token", g.token, "auth `TOKEN` (visible in ps; prefer $"+envAuthToken+" or a file)")
	fs.StringVar(&g.tokenFile, "auth-token-file", g.tokenFile, "read the auth token from `FILE`")
	fs.BoolVar(&g.tls, "tls", g.tls, "connect over TLS (implied by the other --tls-* options)")
	fs.StringVar(&g.tlsCA, "tls-ca", g.tlsCA, "trust the CA certificates in `FILE` (PEM) instead of the system's")
	fs.StringVar(&g.tlsCert, "tls-cert", g.tlsCert, "client certificate `FILE` (PEM), with --tls-key")
	fs.StringVar(&g.tlsKey, "tls-key", g.tlsKey, "client key `FILE` (PEM)")
	fs.StringVar(&g.tlsServerName, "tls-server-name", g.tlsServerName, "expected server `NAME` in its certificate (default: the host)")
	fs.BoolVar(&g.tlsInsecure, "tls-insecure", g.tlsInsecure, "do not verify the server's certificate")
	fs.StringVar(&g.http, "http", g.http, "the server's HTTP API `HOST:PORT[,HOST:PORT...]`, for cluster, locks, deadlocks, top and admin (default $"+envHTTPHost+":$"+envHTTPPort+", else the server's host and "+defaultHTTPPort+")")
	fs.BoolVar(&g.json, "json", g.json, "print results as JSON")
}

// settings is what the global options resolve to.
type settings struct {
	servers []string
	dialer  client.Dialer
}

// resolve turns the options and the environment into client settings.
// Precedence is the server's own (v1.16/V2): flag, then environment, then
// default; for the token --auth-token, --auth-token-file,
// $DFLOCKD_AUTH_TOKEN, $DFLOCKD_AUTH_TOKEN_FILE, each trimmed.
//
// The server is named one way: --server (one server, or shards),
// --endpoints (etcdctl's: one service, reached at the first address that
// answers), or -h/-p (redis-cli's: a host and a port, each defaulting to
// the environment's, then to 127.0.0.1:6388). --cluster makes the
// addresses of --server or --endpoints one cluster's members.
func (g *globals) resolve(getenv func(string) string) (settings, error) {
	var s settings
	named := 0
	for _, given := range []bool{g.server != "", g.endpoints != "", g.host != "" || g.port != ""} {
		if given {
			named++
		}
	}
	if named > 1 {
		return s, errors.New("--server, --endpoints and -h/-p each name the server: give one of them")
	}
	list := []string{""}
	switch {
	case g.server != "":
		list = strings.Split(g.server, ",")
	case g.endpoints != "":
		list = strings.Split(g.endpoints, ",")
	case g.host != "" || g.port != "":
		host := strings.TrimSuffix(strings.TrimPrefix(g.host, "["), "]")
		if strings.Contains(host, ":") && net.ParseIP(host) == nil {
			return s, fmt.Errorf("-h takes a host, not %q: give the port with -p, or use --server HOST:PORT", g.host)
		}
		env := getenv
		getenv = func(k string) string {
			switch {
			case k == envHost && host != "":
				return host
			case k == envPort && g.port != "":
				return g.port
			}
			return env(k)
		}
	}
	for _, v := range list {
		addr, err := serverAddr(strings.TrimSpace(v), getenv)
		if err != nil {
			return s, err
		}
		s.servers = append(s.servers, addr)
	}
	switch {
	case g.cluster:
		s.dialer.Members = s.servers
	case g.endpoints != "":
		// The client's member list without redirects: a connection goes
		// to the first address that answers, for every key.
		s.dialer.Members, s.dialer.MaxRedirects = s.servers, -1
	}
	s.dialer.ReplyTimeout = replyTimeout
	s.dialer.StableRef = g.stableRef
	var err error
	switch {
	case g.token != "":
		s.dialer.AuthToken = strings.TrimSpace(g.token)
	case g.tokenFile != "":
		s.dialer.AuthToken, err = readToken(g.tokenFile)
	case getenv(envAuthToken) != "":
		s.dialer.AuthToken = strings.TrimSpace(getenv(envAuthToken))
	case getenv(envAuthTokenFile) != "":
		s.dialer.AuthToken, err = readToken(getenv(envAuthTokenFile))
	}
	if err != nil {
		return s, err
	}
	s.dialer.TLSConfig, err = g.tlsConfig()
	return s, err
}

// tlsConfig builds the TLS settings, or nil for plain TCP.
func (g *globals) tlsConfig() (*tls.Config, error) {
	if !g.tls && !g.tlsInsecure && g.tlsCA == "" && g.tlsCert == "" && g.tlsKey == "" && g.tlsServerName == "" {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: g.tlsServerName, InsecureSkipVerify: g.tlsInsecure}
	if g.tlsCA != "" {
		pem, err := os.ReadFile(g.tlsCA)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in %s", g.tlsCA)
		}
	}
	if (g.tlsCert == "") != (g.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if g.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(g.tlsCert, g.tlsKey)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("auth token file %s is empty", path)
	}
	return tok, nil
}

// serverAddr returns host:port from a --server value ("host", "host:port",
// "[v6]:port", "v6"), or from DFLOCKD_HOST/DFLOCKD_PORT when it is empty.
func serverAddr(value string, getenv func(string) string) (string, error) {
	host, port := getenv(envHost), getenv(envPort)
	if value != "" {
		h, p, err := net.SplitHostPort(value)
		if err != nil {
			// No port given: the whole value is the host.
			h, p = strings.TrimSuffix(strings.TrimPrefix(value, "["), "]"), ""
		}
		host, port = h, p
	}
	if host == "" {
		host = defaultHost
	}
	if port == "" {
		port = defaultPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errors.New("invalid port " + strconv.Quote(port))
	}
	return net.JoinHostPort(host, port), nil
}
