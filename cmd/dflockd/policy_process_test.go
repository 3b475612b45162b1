package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/policy"
)

// policyConn is a line-protocol client of a policy test.
type policyConn struct {
	t  *testing.T
	c  net.Conn
	rd *bufio.Reader
}

func dialPolicy(t *testing.T, addr, token string) *policyConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pc := &policyConn{t: t, c: c, rd: bufio.NewReader(c)}
	if got := pc.do("auth", "_", token); got != "ok" {
		t.Fatalf("auth: %q", got)
	}
	return pc
}

func (pc *policyConn) do(cmd, key, arg string) string {
	pc.t.Helper()
	pc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := pc.c.Write([]byte(cmd + "\n" + key + "\n" + arg + "\n")); err != nil {
		pc.t.Fatal(err)
	}
	line, err := pc.rd.ReadString('\n')
	if err != nil {
		pc.t.Fatalf("%s %s: %v", cmd, key, err)
	}
	return strings.TrimSuffix(line, "\n")
}

func writePolicy(t *testing.T, file, src string) {
	t.Helper()
	src = strings.NewReplacer("%A", policy.TokenHash("tok-a"), "%B", policy.TokenHash("tok-b")).Replace(src)
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

const policyTwoTeams = `identity team-a
  token %A
  allow lock,read,write a/*
identity team-b
  token %B
  allow lock,read,write b/*
`

// The server with --policy-file: each team's token names its identity,
// a request on the other team's keys is error_denied and the connection
// stays; SIGHUP reloads the file without dropping a connection, and a
// file that does not parse keeps the policy in force.
func TestPolicyFileAndSIGHUP(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy")
	writePolicy(t, file, policyTwoTeams)
	p := startProc(t, "--policy-file", file)
	a := dialPolicy(t, p.addr, "tok-a")
	b := dialPolicy(t, p.addr, "tok-b")
	if got := b.do("l", "b/held", "0 300"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-b l b/held: %q", got)
	}
	tokB := strings.Fields(b.do("l", "b/other", "0 300"))[1]
	for _, req := range [][3]string{{"l", "b/held", "0"}, {"r", "b/other", tokB}, {"n", "b/other", tokB}, {"incr", "b/n", "1"}} {
		if got := a.do(req[0], req[1], req[2]); got != "error_denied" {
			t.Fatalf("team-a %v: %q, want error_denied", req, got)
		}
	}
	if got := a.do("l", "a/job", "0 30"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-a l a/job: %q", got)
	}

	// Reload: team-a may now take b/shared too.
	tokB2 := strings.Fields(b.do("l", "b/shared", "0 300"))[1]
	if got := a.do("l", "b/shared", "0"); got != "error_denied" {
		t.Fatalf("before the reload, team-a l b/shared: %q", got)
	}
	writePolicy(t, file, "identity team-a\n token %A\n allow lock,read,write a/*\n allow lock b/shared\n"+
		"identity team-b\n token %B\n allow lock,read,write b/*\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitForCount(t, p, "policy reloaded", 1)
	if got := a.do("l", "b/shared", "0"); got != "timeout" {
		t.Fatalf("team-a may lock b/shared now, held by team-b: %q, want timeout", got)
	}
	if got := b.do("r", "b/shared", tokB2); got != "ok" {
		t.Fatalf("team-b's lock from before the reloads: %q", got)
	}

	// A file that does not parse: the policy stays, and the log says why.
	writePolicy(t, file, "identity team-a\n token hunter2\n")
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitForCount(t, p, "policy not reloaded", 1)
	if !strings.Contains(p.log.String(), "line 2") {
		t.Fatalf("the refusal does not name the line:\n%s", p.log.String())
	}
	if got := a.do("l", "b/shared", "0 30"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("the policy in force before the bad file: %q", got)
	}
	if got := a.do("ping", "_", "_"); got != "ok" {
		t.Fatalf("connection after three SIGHUPs: %q", got)
	}
}

func waitForCount(t *testing.T, p *serverProc, s string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(p.log.String(), s) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%q not logged %d times:\n%s", s, n, p.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A policy file that does not parse stops the server at start, naming the
// file and the line; "dflockd policy hash" prints a token's line.
func TestPolicyFileBadAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy")
	writePolicy(t, file, "identity a\n  token sha256:00\n")
	cmd := exec.Command(binary(t), "--port", "0", "--policy-file", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 ||
		!strings.Contains(out.String(), "--policy-file "+file+": policy: line 2: a token is stored as sha256") {
		t.Fatalf("exit %v, output %q", err, out.String())
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"policy", "hash", "tok-a"}, &stdout, &stderr); code != 0 ||
		stdout.String() != "token "+policy.TokenHash("tok-a")+"\n" {
		t.Fatalf("policy hash: %d %q %q", code, stdout.String(), stderr.String())
	}
}

// /metrics under a policy: an identity with the metrics class reads it;
// the refusals show by identity and class, the policy's version and the
// identities' connections too.
func TestPolicyMetrics(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy")
	writePolicy(t, file, policyTwoTeams+"identity ops\n token "+policy.TokenHash("tok-ops")+"\n allow metrics *\n")
	_, httpPort, _ := net.SplitHostPort(freeAddr(t))
	p := startProc(t, "--policy-file", file, "--http-port", httpPort)
	a := dialPolicy(t, p.addr, "tok-a")
	for range 3 {
		if got := a.do("l", "b/x", "0"); got != "error_denied" {
			t.Fatal(got)
		}
	}
	get := func(tok string) (int, string) {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+httpPort+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("tok-a"); code != 403 {
		t.Fatalf("team-a's /metrics: %d, want 403", code)
	}
	code, body := get("tok-ops")
	for _, want := range []string{
		`dflockd_denied_total{class="lock",identity="team-a"} 3`,
		`dflockd_denied_total{class="metrics",identity="team-a"} 1`,
		`dflockd_identity_connections{identity="team-a"} 1`,
		`dflockd_policy_identities 3`,
		`dflockd_policy_info{version="`,
		`dflockd_errors_total{status="error_denied"} 3`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics (%d) lacks %q:\n%s", code, want, grepLines(body, "dflockd_denied|dflockd_identity|dflockd_policy|error_denied"))
		}
	}
}

func grepLines(s, alternatives string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, a := range strings.Split(alternatives, "|") {
			if strings.Contains(l, a) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// SIGHUP under load: clients of two identities run lock and release loops
// while the policy is reloaded ten times; no connection is dropped and no
// request is refused that both policies allow, and the rule the last
// reload adds is enforced on the next request after the reload is logged.
func TestPolicyReloadUnderLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy")
	writePolicy(t, file, policyTwoTeams)
	p := startProc(t, "--policy-file", file)
	type result struct {
		pairs int
		err   string
	}
	stop := make(chan struct{})
	results := make(chan result, 8)
	for i := range 8 {
		tok, key := "tok-a", "a/load-"+string(rune('0'+i))
		if i%2 == 1 {
			tok, key = "tok-b", "b/load-"+string(rune('0'+i))
		}
		c := dialPolicy(t, p.addr, tok)
		go func() {
			n := 0
			for {
				select {
				case <-stop:
					results <- result{pairs: n}
					return
				default:
				}
				c.c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := c.c.Write([]byte("l\n" + key + "\n0 30\n")); err != nil {
					results <- result{err: err.Error()}
					return
				}
				line, err := c.rd.ReadString('\n')
				f := strings.Fields(line)
				if err != nil || len(f) != 3 || f[0] != "ok" {
					results <- result{err: "l " + key + ": " + line + errString(err)}
					return
				}
				if _, err := c.c.Write([]byte("r\n" + key + "\n" + f[1] + "\n")); err != nil {
					results <- result{err: err.Error()}
					return
				}
				if line, err := c.rd.ReadString('\n'); err != nil || line != "ok\n" {
					results <- result{err: "r " + key + ": " + line + errString(err)}
					return
				}
				n++
			}
		}()
	}
	a := dialPolicy(t, p.addr, "tok-a")
	if got := a.do("l", "b/shared", "0"); got != "error_denied" {
		t.Fatalf("team-a on b/shared before the reloads: %q", got)
	}
	for i := 1; i <= 10; i++ {
		text := policyTwoTeams + "  allow read b/r" + string(rune('0'+i%10)) + "\n"
		if i == 10 { // the last reload lets team-a lock b/shared
			text = strings.Replace(text, "  allow lock,read,write a/*\n", "  allow lock,read,write a/*\n  allow lock b/shared\n", 1)
		}
		writePolicy(t, file, text)
		p.cmd.Process.Signal(syscall.SIGHUP)
		waitForCount(t, p, "policy reloaded", i)
	}
	if got := a.do("l", "b/shared", "0 5"); !strings.HasPrefix(got, "ok ") {
		t.Fatalf("team-a on b/shared after the reload that allows it: %q", got)
	}
	close(stop)
	total := 0
	for range 8 {
		r := <-results
		if r.err != "" {
			t.Fatalf("a client under load: %s", r.err)
		}
		total += r.pairs
	}
	if total == 0 {
		t.Fatal("no lock and release pair completed during the reloads")
	}
	t.Logf("8 connections, 10 reloads: %d lock+release pairs, none refused or dropped", total)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
