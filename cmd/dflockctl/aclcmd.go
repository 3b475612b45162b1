package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"
)

// The server's policy (dflockd --policy-file) from a terminal, through its
// HTTP API as Redis's ACL LOG and ACL WHOAMI are: "acl log" lists the
// last refusals (GET /v1/acl/log), "acl whoami" the identity the auth
// token names (GET /v1/acl/whoami), and "acl check" whether the policy
// allows an identity a command on a key, with the deciding rule (GET
// /v1/acl/check). The auth token goes as the bearer token, which is what
// names the caller's identity; log and check need the admin class.

const aclUsage = `usage: dflockctl acl log                            [--http HOST:PORT,...]
       dflockctl acl whoami                         [--http HOST:PORT,...]
       dflockctl acl check IDENTITY COMMAND KEY     [--http HOST:PORT,...]

The server's policy (dflockd --policy-file), through its HTTP API
(--http-port); the auth token (--auth-token, $DFLOCKD_AUTH_TOKEN, ...)
names the caller's identity.
  log     the last refusals: time, identity, remote address, command, key
          and the rule that refused (needs the admin class)
  whoami  the identity the auth token names, and the policy's version
  check   whether the policy allows IDENTITY the line-protocol COMMAND
          (l, r, incr, kget, listen, ...) on KEY, and the deciding rule
          (needs the admin class)
--json prints the server's answer. Exit status: 0 done (check: allowed);
6 check: refused; 2 a bad command line, or an IDENTITY or COMMAND the
server does not know; 77 a token that names no identity, or an identity
the policy forbids the call (403); 1 a server without a policy.`

// aclRefusal is one entry of the refusal log, as the table shows it.
type aclRefusal struct {
	At       time.Time `json:"at"`
	Identity string    `json:"identity"`
	Remote   string    `json:"remote"`
	Command  string    `json:"command"`
	Key      string    `json:"key"`
	Reason   string    `json:"reason"`
}

// acl is "dflockctl acl log|whoami|check".
func (c *cli) acl(g *globals, args []string) int {
	sub, rest, code, ok := c.subcommand("acl", aclUsage, g, args, "log", "whoami", "check")
	if !ok {
		return code
	}
	name := "acl " + sub
	n := 0
	if sub == "check" {
		n = 3
	}
	pos, code, ok := c.parseCommand(name, aclUsage, g, rest, n, n, nil)
	if !ok {
		return code
	}
	ob, code := c.observatory(name, g)
	if ob == nil {
		return code
	}
	path := "/v1/acl/" + sub
	if sub == "check" {
		path += "?" + url.Values{"identity": {pos[0]}, "command": {pos[1]}, "key": {pos[2]}}.Encode()
	}
	a, err := ob.do(http.MethodGet, path, nil)
	if err != nil {
		return c.fail(exitUnavailable, "%s: %v", name, err)
	}
	if a.status != http.StatusOK {
		return c.aclFailure(name, ob, a)
	}
	doc := rawJSON(strings.TrimSpace(string(a.raw)))
	switch sub {
	case "log":
		var r struct {
			Refusals []aclRefusal `json:"refusals"`
		}
		if err := json.Unmarshal(a.raw, &r); err != nil {
			return c.fail(exitFailure, "%s: %v", name, err)
		}
		c.emit(g, refusalTable(r.Refusals), doc)
	case "whoami":
		var r struct {
			Identity      string `json:"identity"`
			PolicyVersion string `json:"policy_version"`
			Everything    bool   `json:"everything"`
		}
		if err := json.Unmarshal(a.raw, &r); err != nil {
			return c.fail(exitFailure, "%s: %v", name, err)
		}
		line := fmt.Sprintf("%s (policy %s)", r.Identity, r.PolicyVersion)
		if r.Everything {
			line = fmt.Sprintf("%s (policy %s; may do everything)", r.Identity, r.PolicyVersion)
		}
		c.emit(g, line, doc)
	case "check":
		var r struct {
			Allowed bool   `json:"allowed"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal(a.raw, &r); err != nil {
			return c.fail(exitFailure, "%s: %v", name, err)
		}
		if !r.Allowed {
			c.emit(g, "refused: "+r.Reason, doc)
			return exitRefused
		}
		c.emit(g, "allowed: "+r.Reason, doc)
	}
	return exitOK
}

// refusalTable renders the refusal log, oldest first, in local time.
func refusalTable(log []aclRefusal) string {
	if len(log) == 0 {
		return "no refusals"
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tIDENTITY\tREMOTE\tCOMMAND\tKEY\tRULE")
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, r := range log {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.At.Local().Format(time.DateTime), dash(r.Identity),
			dash(r.Remote), dash(r.Command), dash(r.Key), dash(r.Reason))
	}
	tw.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// aclFailure is failure for the acl routes, whose 401 and 404 say more:
// a call without a token, a server without a policy (or without these
// routes), and check's identity the policy lacks.
func (c *cli) aclFailure(name string, ob *observatory, a *adminAnswer) int {
	switch {
	case a.status == http.StatusUnauthorized && ob.auth == "":
		return c.fail(exitNoPerm, "%s: the server wants a token naming an identity: give --auth-token, --auth-token-file or $%s", name, envAuthToken)
	case a.status == http.StatusNotFound && strings.Contains(a.Detail, "--policy-file"):
		return c.fail(exitFailure, "%s: the server has no policy (--policy-file)", name)
	case a.status == http.StatusNotFound && a.Detail == "no such route":
		return c.fail(exitFailure, "%s: the server has no /v1/acl routes (a dflockd-ng without policies?)", name)
	case a.status == http.StatusNotFound && a.Error != "" && name == "acl check":
		return c.fail(exitUsage, "%s: %s", name, a.Detail) // "the policy has no identity …"
	}
	return c.failure(name, a)
}
