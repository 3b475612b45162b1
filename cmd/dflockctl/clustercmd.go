package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// "cluster add|remove" changes a dflockd-ng cluster's membership through
// the HTTP admin API of its leader (POST /v1/admin/voters, DELETE
// /v1/admin/voters/{id}: spec §F.2), with the admin token in
// X-Dflockd-Admin. The HTTP API has addresses of its own (--http-port),
// so the command takes them apart from --server; a member that does not
// lead answers 503 not_leader, and the next listed address is asked.

const clusterUsage = `usage: dflockctl cluster add ID RAFT_ADDR CLIENT_ADDR [options]
       dflockctl cluster remove ID [options]

Changes the membership of a dflockd-ng cluster through the HTTP admin API
of its leader (members started with --http-port and --admin-token):
"add" makes server ID, listening for raft on RAFT_ADDR and for clients
on CLIENT_ADDR (both host:port), a voting member; it must run with the
cluster's --raft-auth-token and without --cluster-bootstrap. "remove"
takes member ID out. Each --http address is asked in turn until one
leads.

options:
  --http HOST:PORT[,HOST:PORT...]   the members' HTTP API (default: $DFLOCKD_HTTP_HOST, else the
                                    --server host, and port $DFLOCKD_HTTP_PORT, else 6389)
  --admin-token T, --admin-token-file F
                                    the admin token (default: $DFLOCKD_ADMIN_TOKEN,
                                    $DFLOCKD_ADMIN_TOKEN_FILE)
global options: --auth-token (sent as a bearer token), --tls* (HTTPS), --json`

// The HTTP side's defaults and environment, the server's own names.
const (
	defaultHTTPPort   = "6389" // dflockd's documented HTTP port
	envHTTPHost       = "DFLOCKD_HTTP_HOST"
	envHTTPPort       = "DFLOCKD_HTTP_PORT"
	envAdminToken     = "DFLOCKD_ADMIN_TOKEN"
	envAdminTokenFile = "DFLOCKD_ADMIN_TOKEN_FILE"

	// adminTimeout bounds one admin call: the leader waits for the
	// client address and then the configuration change to commit.
	adminTimeout = 30 * time.Second
)

// clusterOptions are the admin token options of the cluster and admin
// commands (--http, their address, is a global option).
type clusterOptions struct {
	token, tokenFile string
}

func (o *clusterOptions) define(fs *flag.FlagSet) {
	fs.StringVar(&o.token, "admin-token", "", "admin `TOKEN` (visible in ps; prefer $"+envAdminToken+" or a file)")
	fs.StringVar(&o.tokenFile, "admin-token-file", "", "read the admin token from `FILE`")
}

func (c *cli) cluster(g *globals, args []string) int {
	sub, rest, code, ok := c.subcommand("cluster", clusterUsage, g, args, "add", "remove")
	if !ok {
		return code
	}
	var o clusterOptions
	n := 3
	if sub == "remove" {
		n = 1
	}
	pos, code, ok := c.parseCommand("cluster "+sub, clusterUsage, g, rest, n, n, o.define)
	if !ok {
		return code
	}
	name := "cluster " + sub
	s, token, addrs, err := c.adminTarget(g, &o)
	if err != nil {
		return c.fail(exitUsage, "%s: %v", name, err)
	}
	method, path, body := http.MethodDelete, "/v1/admin/voters/"+url.PathEscape(pos[0]), []byte(nil)
	if sub == "add" {
		for i, what := range []string{"RAFT_ADDR", "CLIENT_ADDR"} {
			if _, port, err := net.SplitHostPort(pos[1+i]); err != nil || port == "" {
				return c.fail(exitUsage, "%s: %s %q is not host:port", name, what, pos[1+i])
			}
		}
		method, path = http.MethodPost, "/v1/admin/voters"
		body, _ = json.Marshal(map[string]string{"node_id": pos[0], "raft_addr": pos[1], "client_addr": pos[2]})
	}
	hc := &http.Client{Timeout: adminTimeout}
	if s.dialer.TLSConfig != nil {
		hc.Transport = &http.Transport{TLSClientConfig: s.dialer.TLSConfig}
	}
	return c.askLeader(name, s, token, addrs, hc, method, path, body,
		func(_ string, resp *http.Response, _ time.Time) (int, error) {
			a, err := answerOf(resp)
			if err != nil {
				return 0, err
			}
			return c.adminOutcome(g, name, pos[0], a), nil
		})
}

// adminAnswer is an admin call's answer.
type adminAnswer struct {
	status int
	header http.Header
	raw    []byte
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

func doAdmin(hc *http.Client, req *http.Request) (*adminAnswer, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	return answerOf(resp)
}

// answerOf reads resp (up to 1 MiB) and closes its body; the error and
// detail of an answer other than 200 are parsed from it.
func answerOf(resp *http.Response) (*adminAnswer, error) {
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	a := &adminAnswer{status: resp.StatusCode, header: resp.Header, raw: raw}
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(raw, a) // a body that is not ours leaves Error empty
	}
	return a, nil
}

// adminOutcome prints the answer of the member that took the call, and
// returns the exit code for it.
func (c *cli) adminOutcome(g *globals, name, id string, a *adminAnswer) int {
	if a.status != http.StatusOK {
		return c.failure(name, a) // observecmd.go
	}
	verb := "added"
	if strings.HasSuffix(name, "remove") {
		verb = "removed"
	}
	c.emit(g, id+" "+verb, rawJSON(strings.TrimSpace(string(a.raw))))
	return exitOK
}

// adminToken resolves the admin token as the auth token is: the flag,
// the file flag, then the variables; trimmed.
func (o *clusterOptions) adminToken(getenv func(string) string) (string, error) {
	var tok string
	var err error
	switch {
	case o.token != "":
		tok = strings.TrimSpace(o.token)
	case o.tokenFile != "":
		tok, err = readToken(o.tokenFile)
	case getenv(envAdminToken) != "":
		tok = strings.TrimSpace(getenv(envAdminToken))
	case getenv(envAdminTokenFile) != "":
		tok, err = readToken(getenv(envAdminTokenFile))
	}
	if err == nil && tok == "" {
		err = errors.New("no admin token: give --admin-token, --admin-token-file or $" + envAdminToken)
	}
	return tok, err
}

// httpAddrs resolves --http: each item host:port, or host alone (port
// 6389); without it, one address from $DFLOCKD_HTTP_HOST (else server's
// host) and $DFLOCKD_HTTP_PORT (else 6389).
func (g *globals) httpAddrs(getenv func(string) string, server string) ([]string, error) {
	if g.http == "" {
		host := getenv(envHTTPHost)
		if host == "" {
			host, _, _ = net.SplitHostPort(server)
		}
		port := getenv(envHTTPPort)
		if port == "" {
			port = defaultHTTPPort
		}
		if err := checkPort(port); err != nil {
			return nil, err
		}
		return []string{net.JoinHostPort(host, port)}, nil
	}
	var out []string
	for _, v := range strings.Split(g.http, ",") {
		v = strings.TrimSpace(v)
		h, p, err := net.SplitHostPort(v)
		if err != nil {
			h, p = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]"), defaultHTTPPort
		}
		if h == "" {
			h = defaultHost
		}
		if err := checkPort(p); err != nil {
			return nil, err
		}
		out = append(out, net.JoinHostPort(h, p))
	}
	return out, nil
}

func checkPort(p string) error {
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return errors.New("invalid port " + strconv.Quote(p))
	}
	return nil
}

// adminTarget resolves what an admin command needs: the settings (TLS and
// the bearer token), the admin token, and the HTTP addresses to try.
func (c *cli) adminTarget(g *globals, o *clusterOptions) (settings, string, []string, error) {
	s, err := g.resolve(c.getenv)
	if err != nil {
		return settings{}, "", nil, err
	}
	token, err := o.adminToken(c.getenv)
	if err != nil {
		return settings{}, "", nil, err
	}
	addrs, err := g.httpAddrs(c.getenv, s.servers[0])
	return s, token, addrs, err
}

// askLeader makes an admin call (method, path, and body: JSON, or nil) to
// each of addrs in turn, with the admin token and any bearer token, over
// HTTPS where s has TLS, until a member that leads answers, and returns
// the command's exit code. The leader's 200 goes to took, with when the
// request was sent; took returns the exit code, or an error (the answer
// could not be read) to ask the next address. Another answer is the
// command's failure (c.failure), but a member that does not lead answers
// 503 not_leader, with the leader's client address in X-Dflockd-Leader,
// and the next address is asked. When none leads, the error names that
// client address, if a member gave one, so that --http can be given the
// leader's HTTP address; else it is the last address's error ("ADDR does
// not lead", or why ADDR could not be asked).
func (c *cli) askLeader(name string, s settings, token string, addrs []string, hc *http.Client,
	method, path string, body []byte, took func(addr string, resp *http.Response, sent time.Time) (int, error)) int {
	scheme := "http"
	if s.dialer.TLSConfig != nil {
		scheme = "https"
	}
	var leader string
	var lastErr error
	for _, addr := range addrs {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequest(method, scheme+"://"+addr+path, rd)
		if err != nil {
			return c.fail(exitUsage, "%s: %v", name, err)
		}
		req.Header.Set("X-Dflockd-Admin", token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if s.dialer.AuthToken != "" {
			req.Header.Set("Authorization", "Bearer "+s.dialer.AuthToken)
		}
		sent := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		if resp.StatusCode == http.StatusOK {
			code, err := took(addr, resp, sent)
			if err != nil {
				lastErr = err
				continue
			}
			return code
		}
		a, err := answerOf(resp)
		if err != nil {
			lastErr = err
			continue
		}
		if a.status == http.StatusServiceUnavailable && a.Error == "not_leader" {
			if l := a.header.Get("X-Dflockd-Leader"); l != "" {
				leader = l
			}
			lastErr = fmt.Errorf("%s does not lead", addr)
			continue
		}
		return c.failure(name, a) // observecmd.go
	}
	if leader != "" {
		return c.fail(exitUnavailable, "%s: no leader among %s; the leader's client address is %s: give --http its HTTP address",
			name, strings.Join(addrs, ","), leader)
	}
	return c.fail(exitUnavailable, "%s: %v", name, lastErr)
}
