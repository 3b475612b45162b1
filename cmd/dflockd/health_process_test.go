package main

import (
	"bytes"
	"errors"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// healthRun runs "dflockd health args..." with only env for environment,
// as a HEALTHCHECK runs it, and returns its exit status and output.
func healthRun(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exitingCommand(t, binary(t), append([]string{"health"}, args...)...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// healthCase is one probe and what it must print: a pattern for stdout
// when healthy (code 0), for stderr otherwise (code 1); the other stream
// must be empty.
type healthCase struct {
	name string
	env  []string
	args []string
	code int
	want string // regexp, anchored
}

func checkHealth(t *testing.T, cases []healthCase) {
	t.Helper()
	for _, tc := range cases {
		code, stdout, stderr := healthRun(t, tc.env, tc.args...)
		got, other := stdout, stderr
		if tc.code != 0 {
			got, other = stderr, stdout
		}
		if code != tc.code || other != "" || !regexp.MustCompile(`^`+tc.want+`\n$`).MatchString(got) {
			t.Errorf("%s: health %q: exit %d, stdout %q, stderr %q; want exit %d and %q",
				tc.name, tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// The probe against real servers: healthy on each profile and over HTTP,
// found through the server's own variables, and not healthy (exit 1, one
// line saying why) when the server is down, silent, speaks another
// protocol or wants a token it lacks.
func TestHealthProcess(t *testing.T) {
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	v2 := startProc(t, "--http-port", httpPort)
	_, v2Port, _ := net.SplitHostPort(v2.addr)
	v1 := startProc(t, "--compat", "v1")
	rf := startProc(t, "--compat", "rf")
	authed := startProc(t, "--auth-token", "s3cret-token")
	down := freeAddr(t) // nothing listens there

	// A listener that accepts and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()

	q := regexp.QuoteMeta
	took := ` in [0-9.]+[µm]?s`
	checkHealth(t, []healthCase{
		{name: "v2", args: []string{"--addr", v2.addr}, want: q("healthy: "+v2.addr+" answered ping") + took},
		{name: "the server's variables", env: []string{"DFLOCKD_HOST=0.0.0.0", "DFLOCKD_PORT=" + v2Port},
			want: q("healthy: 127.0.0.1:"+v2Port+" answered ping") + took},
		{name: "HTTP", args: []string{"--http", httpAddr},
			want: q("healthy: GET http://"+httpAddr+"/health answered 200 OK") + took},
		{name: "HTTP URL", args: []string{"--http", "http://" + httpAddr + "/ready"},
			want: q("healthy: GET http://"+httpAddr+"/ready answered 200 OK") + took},
		{name: "v1 by DFLOCKD_COMPAT", env: []string{"DFLOCKD_COMPAT=v1"}, args: []string{"--addr", v1.addr},
			want: q("healthy: "+v1.addr+" answered stats") + took},
		{name: "rf, ping unknown", args: []string{"--addr", rf.addr},
			want: q("healthy: "+rf.addr+" answered stats") + took},
		{name: "token", env: []string{"DFLOCKD_AUTH_TOKEN=s3cret-token"}, args: []string{"--addr", authed.addr},
			want: q("healthy: "+authed.addr+" answered ping") + took},

		{name: "down", args: []string{"--addr", down}, code: 1,
			want: q("unhealthy: " + down + ": connection refused")},
		{name: "HTTP down", args: []string{"--http", down}, code: 1,
			want: q("unhealthy: GET http://" + down + "/health: connection refused")},
		{name: "silent", args: []string{"--addr", silent.Addr().String(), "--timeout", "300ms"}, code: 1,
			want: q("unhealthy: " + silent.Addr().String() + ": ping: no reply within 300ms")},
		{name: "an HTTP port", args: []string{"--addr", httpAddr}, code: 1,
			want: q("unhealthy: " + httpAddr + `: ping answered "HTTP/1.1 400 Bad Request"`)},
		{name: "HTTP to the line port", args: []string{"--http", v2.addr}, code: 1,
			want: q("unhealthy: GET http://"+v2.addr+"/health: ") + `.*malformed HTTP.*`},
		{name: "no token", args: []string{"--addr", authed.addr}, code: 1,
			want: q("unhealthy: " + authed.addr + `: ping answered "error_auth": the server needs a token (DFLOCKD_AUTH_TOKEN, DFLOCKD_AUTH_TOKEN_FILE or --auth-token-file)`)},
		{name: "wrong token", env: []string{"DFLOCKD_AUTH_TOKEN=guess"}, args: []string{"--addr", authed.addr}, code: 1,
			want: q("unhealthy: " + authed.addr + `: auth answered "error_auth"`)},
	})
	// Only the probe that did not know the profile asked a ping unknown.
	for _, p := range []*serverProc{v2, v1, authed} {
		if strings.Contains(p.log.String(), "command=ping") {
			t.Errorf("a probe that knew the profile sent a ping it does not know:\n%s", p.log.String())
		}
	}
}

// The probe against a server with TLS: over TLS when it has the server's
// certificate (DFLOCKD_TLS_CERT, as the server reads it, or --tls-cert),
// on the line port and the HTTP API alike; not healthy when it speaks
// plain TCP to it, or the server presents another certificate.
func TestHealthProcessTLS(t *testing.T) {
	httpAddr := freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(httpAddr)
	srv := startTLSProc(t, "--http-port", httpPort)
	other, _ := certtest.NewCA(t, "another CA").Leaf(t, "other").Write(t, t.TempDir())

	q := regexp.QuoteMeta
	took := ` in [0-9.]+[µm]?s`
	checkHealth(t, []healthCase{
		{name: "TLS", env: []string{"DFLOCKD_TLS_CERT=" + srv.certFile}, args: []string{"--addr", srv.addr},
			want: q("healthy: "+srv.addr+" answered ping") + took},
		{name: "HTTPS", args: []string{"--tls-cert", srv.certFile, "--http", httpAddr},
			want: q("healthy: GET https://"+httpAddr+"/health answered 200 OK") + took},

		{name: "plain to TLS", args: []string{"--addr", srv.addr}, code: 1,
			want: q("unhealthy: " + srv.addr + ": ping: the connection was closed without a reply" +
				" (a server with TLS: DFLOCKD_TLS_CERT or --tls-cert; or at --max-connections)")},
		{name: "another certificate", args: []string{"--tls-cert", other, "--addr", srv.addr}, code: 1,
			want: q("unhealthy: " + srv.addr + ": TLS handshake: the server's certificate is not the one in " + other)},
		{name: "not a certificate", args: []string{"--tls-cert", "/dev/null", "--addr", srv.addr}, code: 2,
			want: q("dflockd: health: --tls-cert /dev/null: no PEM certificate in it (see dflockd health --help)")},
	})
}
