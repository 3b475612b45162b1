package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/dflockd-ng/dflockd/cmd/dflockctl/client"
)

// Server defaults, shared with the server's own configuration.
const (
	defaultHost = "127.0.0.1"
	defaultPort = "6388"

	envHost          = "DFLOCKD_HOST"
	envPort          = "DFLOCKD_PORT"
	envAuthToken     = "DFLOCKD_AUTH_TOKEN"
	envAuthTokenFile = "DFLOCKD_AUTH_TOKEN_FILE"
)

// endpointFlags are the options every server subcommand takes.
type endpointFlags struct {
	server, token, tokenFile string
}

func (e *endpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.server, "server", "", "server `HOST:PORT` (default $"+envHost+":$"+envPort+", else "+defaultHost+":"+defaultPort+")")
	fs.StringVar(&e.token, "auth-token", "", "auth `TOKEN` (visible in ps; prefer $"+envAuthToken+" or a file)")
	fs.StringVar(&e.tokenFile, "auth-token-file", "", "read the auth token from `FILE`")
}

// config resolves the server address and token. Precedence is the
// server's own (v1.16/V2): flag, then environment, then default; for the
// token --auth-token, --auth-token-file, $DFLOCKD_AUTH_TOKEN,
// $DFLOCKD_AUTH_TOKEN_FILE, each trimmed of surrounding white space.
func (e *endpointFlags) config(getenv func(string) string) (client.Config, error) {
	var cfg client.Config
	addr, err := serverAddr(e.server, getenv)
	if err != nil {
		return cfg, err
	}
	cfg.Addr = addr
	switch {
	case e.token != "":
		cfg.AuthToken = strings.TrimSpace(e.token)
	case e.tokenFile != "":
		cfg.AuthToken, err = readToken(e.tokenFile)
	case getenv(envAuthToken) != "":
		cfg.AuthToken = strings.TrimSpace(getenv(envAuthToken))
	case getenv(envAuthTokenFile) != "":
		cfg.AuthToken, err = readToken(getenv(envAuthTokenFile))
	}
	return cfg, err
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

// serverAddr returns host:port from --server ("host", "host:port",
// "[v6]:port", "v6") or from DFLOCKD_HOST/DFLOCKD_PORT.
func serverAddr(flagValue string, getenv func(string) string) (string, error) {
	host, port := getenv(envHost), getenv(envPort)
	if flagValue != "" {
		h, p, err := net.SplitHostPort(flagValue)
		if err != nil {
			// No port given: the whole value is the host.
			h, p = strings.TrimSuffix(strings.TrimPrefix(flagValue, "["), "]"), ""
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
