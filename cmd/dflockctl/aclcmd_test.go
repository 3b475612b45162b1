package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/httpapi"
	"github.com/dflockd-ng/dflockd/policy"
	sessions "github.com/dflockd-ng/dflockd/session"
)

// aclPolicy gives team-a its own keys and ops the admin class.
const aclPolicy = `identity team-a
  token %A
  allow lock,signal,listen a.*
identity ops
  token %O
  allow observe,metrics,admin *
`

// startPolicyServer is an in-process server's HTTP API with aclPolicy
// (tokens tok-a and tok-ops) and the auth token "root".
func startPolicyServer(t *testing.T) (*observedServer, *policy.Policy) {
	t.Helper()
	src := strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%O", policy.TokenHash("tok-ops")).Replace(aclPolicy)
	p, err := policy.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return startServerAPI(t, sessions.Config{Policy: p}, httpapi.Config{AuthToken: "root"}), p
}

// expectErr fails the test unless r exited with code, printed nothing on
// stdout and said why on stderr.
func expectErr(t *testing.T, r result, code int, why, what string) {
	t.Helper()
	expectCode(t, r, code, what)
	if r.stdout != "" || !strings.HasPrefix(r.stderr, "dflockctl: ") || !strings.Contains(r.stderr, why) {
		t.Fatalf("%s: stdout %q, stderr %q; want nothing and %q", what, r.stdout, r.stderr, why)
	}
}

// acl whoami prints the identity the token names; --json the server's
// answer.
func TestACLWhoami(t *testing.T) {
	t.Parallel()
	srv, p := startPolicyServer(t)
	at := "--http=" + srv.addr
	expectOut(t, run(t, nil, "acl", "whoami", at, "--auth-token", "tok-a"), exitOK, "team-a (policy "+p.Version+")\n", "whoami as team-a")
	expectOut(t, run(t, []string{envAuthToken + "=tok-ops"}, "acl", "whoami", at), exitOK, "ops (policy "+p.Version+")\n", "whoami, token from the environment")
	expectOut(t, run(t, nil, "--auth-token", "root", "acl", "whoami", at), exitOK,
		"auth-token (policy "+p.Version+"; may do everything)\n", "whoami as the --auth-token holder")
	r := run(t, nil, "acl", "whoami", at, "--auth-token", "tok-a", "--json")
	expectCode(t, r, exitOK, "whoami --json")
	var who struct {
		Identity      string `json:"identity"`
		PolicyVersion string `json:"policy_version"`
		Everything    bool   `json:"everything"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &who); err != nil || who.Identity != "team-a" || who.PolicyVersion != p.Version || who.Everything {
		t.Fatalf("whoami --json: %v %q", err, r.stdout)
	}
	expectErr(t, run(t, nil, "acl", "whoami", at), exitNoPerm, "acl whoami: the server wants a token naming an identity", "whoami without a token")
	expectErr(t, run(t, nil, "acl", "whoami", at, "--auth-token", "tok-x"), exitNoPerm, "acl whoami: the server rejected the auth token", "whoami with an unknown token")
}

// acl check exits 0 when the policy allows, 6 when it refuses, with the
// deciding rule either way; it needs the admin class.
func TestACLCheck(t *testing.T) {
	t.Parallel()
	srv, _ := startPolicyServer(t)
	at := "--http=" + srv.addr
	ops := []string{envAuthToken + "=tok-ops"}
	expectOut(t, run(t, ops, "acl", "check", "team-a", "l", "a.job", at), exitOK, "allowed: line 3: allow lock,signal,listen a.*\n", "check, allowed")
	r := run(t, ops, "acl", "check", "team-a", "kset", "b.job", at)
	expectCode(t, r, exitRefused, "check, refused")
	if r.stdout != "refused: no rule of identity team-a names write for this key (deny by default)\n" || r.stderr != "" {
		t.Fatalf("check, refused: stdout %q, stderr %q", r.stdout, r.stderr)
	}
	expectOut(t, run(t, ops, "acl", "check", "team-a", "ping", "_", at), exitOK, "allowed: the command touches no one's keys: it is not checked\n", "check of an unchecked command")
	r = run(t, ops, "acl", "check", "team-a", "l", "b.job", at, "--json")
	expectCode(t, r, exitRefused, "check --json, refused")
	var c struct {
		Identity, Command, Key, Class, Reason string
		Allowed                               bool
	}
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil || c.Identity != "team-a" || c.Command != "l" || c.Key != "b.job" ||
		c.Class != "lock" || c.Allowed || !strings.Contains(c.Reason, "deny by default") {
		t.Fatalf("check --json: %v %q", err, r.stdout)
	}
	expectOut(t, run(t, nil, "acl", "check", "auth-token", "kdel", "b.job", at, "--auth-token", "root"), exitOK,
		"allowed: identity auth-token may do everything\n", "check of the --auth-token holder, by it")

	expectErr(t, run(t, ops, "acl", "check", "nobody", "l", "k", at), exitUsage, `acl check: the policy has no identity "nobody"`, "check of an unknown identity")
	expectErr(t, run(t, ops, "acl", "check", "team-a", "zz", "k", at), exitUsage, `acl check: refused: bad_request: unknown command "zz"`, "check of an unknown command")
	expectErr(t, run(t, nil, "acl", "check", "team-a", "l", "a.job", at, "--auth-token", "tok-a"), exitNoPerm,
		"acl check: forbidden: identity team-a: no rule of identity team-a names admin", "check by an identity without admin")
}

// acl log lists the refusals as a table, oldest first; --json is the
// server's answer. A 403 from any HTTP command names the deciding rule.
func TestACLLog(t *testing.T) {
	t.Parallel()
	srv, p := startPolicyServer(t)
	at := "--http=" + srv.addr
	ops := []string{envAuthToken + "=tok-ops"}
	expectOut(t, run(t, ops, "acl", "log", at), exitOK, "no refusals\n", "an empty log")

	expectErr(t, run(t, nil, "acl", "log", at, "--auth-token", "tok-a"), exitNoPerm,
		"acl log: forbidden: identity team-a: no rule of identity team-a names admin for this key (deny by default)", "log by an identity without admin")
	expectErr(t, run(t, nil, "locks", at, "--auth-token", "tok-a"), exitNoPerm,
		"locks: forbidden: identity team-a: no rule of identity team-a names observe", "locks by an identity without observe")

	r := run(t, ops, "acl", "log", at)
	expectCode(t, r, exitOK, "log")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^TIME +IDENTITY +REMOTE +COMMAND +KEY +RULE$`).MatchString(lines[0]) {
		t.Fatalf("log: want a header and 2 rows:\n%s", r.stdout)
	}
	for i, want := range []string{
		`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +team-a +127\.0\.0\.1:\d+ +GET /v1/acl/log +> +no rule of identity team-a names admin for this key \(deny by default\)$`,
		`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +team-a +127\.0\.0\.1:\d+ +GET /v1/keys +- +no rule of identity team-a names observe for this key \(deny by default\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[1+i]) {
			t.Errorf("log row %d: %q, want %s", i+1, lines[1+i], want)
		}
	}

	r = run(t, ops, "acl", "log", at, "--json")
	expectCode(t, r, exitOK, "log --json")
	var doc struct {
		PolicyVersion string `json:"policy_version"`
		Refusals      []struct {
			Identity, Command, Class string
		} `json:"refusals"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.PolicyVersion != p.Version || len(doc.Refusals) != 2 ||
		doc.Refusals[0].Command != "GET /v1/acl/log" || doc.Refusals[0].Class != "admin" || doc.Refusals[1].Class != "observe" {
		t.Fatalf("log --json: %v %q", err, r.stdout)
	}
}

// Without a policy each acl command says so; usage errors exit 2.
func TestACLNoPolicyAndUsage(t *testing.T) {
	t.Parallel()
	srv := startObserved(t)
	at := "--http=" + srv.addr
	for _, args := range [][]string{{"log"}, {"whoami"}, {"check", "team-a", "l", "k"}} {
		name := "acl " + args[0]
		expectErr(t, run(t, nil, append(append([]string{"acl"}, args...), at)...), exitFailure,
			name+": the server has no policy (--policy-file)", name+" without a policy")
	}
	for _, tt := range []struct {
		args []string
		why  string
	}{
		{[]string{"acl"}, "acl: missing subcommand"},
		{[]string{"acl", "grant"}, `acl: unknown subcommand "grant"`},
		{[]string{"acl", "check", "team-a", "l"}, "acl check: missing arguments"},
		{[]string{"acl", "check", "team-a", "l", "k", "extra"}, `acl check: unexpected argument "extra"`},
		{[]string{"acl", "whoami", "team-a"}, `acl whoami: unexpected argument "team-a"`},
		{[]string{"acl", "log", "--bogus"}, "acl log: unknown flag --bogus"},
	} {
		expectErr(t, run(t, nil, tt.args...), exitUsage, tt.why, strings.Join(tt.args, " "))
	}
	r := run(t, nil, "help", "acl")
	expectCode(t, r, exitOK, "help acl")
	if !strings.Contains(r.stdout, "usage: dflockctl acl log") || !strings.Contains(r.stdout, "6 check: refused") {
		t.Fatalf("help acl:\n%s", r.stdout)
	}
}
