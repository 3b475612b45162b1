package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dflockd-ng/dflockd/tlscert/certtest"
)

// clusterQuotaPolicy: team-q (by its token, or by its client certificate
// where the members ask for one) may do anything under q/ within its
// quotas; ops may do anything (the tests find the leader with it).
const clusterQuotaPolicy = `identity team-q
  token %A
  cert team-q.clients
  allow * q/*
  quota locks=2 waiters=1 keys=1
identity ops
  token %O
  allow * *
`

// TestClusterQuotas: on a 3-member cluster (processes) the locks and keys
// quotas hold for the identity as a whole, whichever connection asks; a
// failover keeps the counts (the holds of the dead leader's connections
// stay until their leases end, and still count), because the identity and
// its quotas went through the log to every replica; and a reload's new
// quota, SIGHUPed to the members, reaches the new leader's replica.
func TestClusterQuotas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three server processes")
	}
	file := filepath.Join(t.TempDir(), "policy")
	writeIsolationPolicy(t, file, clusterQuotaPolicy)
	hms, _ := startIsolationMembers(t, false, "--policy-file", file)
	ms, httpOf := membersOf(hms)
	lead := quotaLeader(t, ms, nil, nil)

	c1, c2 := dialIso(t, lead.client, nil, "tok-a"), dialIso(t, lead.client, nil, "tok-a")
	c1.grant("l", "q/1", "0 300")
	c2.grant("l", "q/2", "0 300")
	for _, step := range []struct {
		c                   *isoConn
		cmd, key, arg, want string
	}{
		{c1, "l", "q/3", "0 300", "error_max_locks"}, // two claims across two connections
		{c2, "incr", "q/n", "1", "ok 1"},
		{c1, "incr", "q/m", "1", "error_max_keys"},
	} {
		if got := step.c.do(step.cmd, step.key, step.arg); got != step.want {
			t.Fatalf("on the leader %s: %s %s %s: %q, want %q", lead.id, step.cmd, step.key, step.arg, got, step.want)
		}
	}

	// An HTTP session of the identity, on the same leader: its acquire
	// is past the quota the two connections reached.
	web := (&isoNet{t: t, scheme: "http://"}).web(httpOf[lead], "tok-a")
	code, body := web.call("POST", "/v1/sessions", "", nil)
	var hs struct {
		SessionID string `json:"session_id"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &hs) != nil {
		t.Fatalf("team-q POST /v1/sessions: %d %s", code, body)
	}
	if code, body := web.call("POST", "/v1/locks/"+url.PathEscape("q/h"), hs.SessionID,
		map[string]int{"acquire_timeout_s": 0, "lease_ttl_s": 300}); !strings.Contains(body, `"max_locks"`) {
		t.Fatalf("team-q's HTTP lock q/h past its quota: %d %s, want max_locks", code, body)
	}

	// The leader dies: its connections' holds are kept, and counted, on
	// the replica that leads next.
	lead.signal(syscall.SIGKILL)
	next := quotaLeader(t, ms, lead, nil)
	t.Logf("leader %s killed; %s leads", lead.id, next.id)
	c3 := dialIso(t, next.client, nil, "tok-a")
	if got := c3.do("l", "q/3", "0 300"); got != "error_max_locks" {
		t.Fatalf("after the failover, on %s: l q/3: %q, want error_max_locks (q/1 and q/2 are still held)", next.id, got)
	}
	if got := c3.do("incr", "q/m", "1"); got != "error_max_keys" {
		t.Fatalf("after the failover, on %s: incr q/m: %q, want error_max_keys", next.id, got)
	}

	// A reload raises locks to 3: the leader's replica applies it.
	writeIsolationPolicy(t, file, strings.Replace(clusterQuotaPolicy, "locks=2", "locks=3", 1))
	for _, m := range ms {
		if m != lead {
			m.signal(syscall.SIGHUP)
		}
	}
	within(t, 10*time.Second, "the raised quota in force on "+next.id, func() (bool, string) {
		got := c3.do("l", "q/3", "0 300")
		return strings.HasPrefix(got, "ok "), got
	})
	if got := c3.do("l", "q/4", "0 300"); got != "error_max_locks" {
		t.Fatalf("past the raised quota, on %s: l q/4: %q, want error_max_locks", next.id, got)
	}
}

// membersOf returns the members of hms, and each one's httpMember.
func membersOf(hms []*httpMember) ([]*member, map[*member]*httpMember) {
	var ms []*member
	httpOf := map[*member]*httpMember{}
	for _, m := range hms {
		ms = append(ms, m.member)
		httpOf[m.member] = m
	}
	return ms, httpOf
}

// quotaLeader returns the member (but skip) that accepts ops' write on
// its line protocol (over TLS with cfg), waiting up to 30 s for one.
func quotaLeader(t *testing.T, ms []*member, skip *member, cfg *tls.Config) *member {
	t.Helper()
	var found *member
	within(t, 30*time.Second, "a leader", func() (bool, string) {
		for _, m := range ms {
			if m == skip {
				continue
			}
			c, err := net.DialTimeout("tcp", m.client, time.Second)
			if err != nil {
				continue
			}
			c.Close()
			ic := dialIso(t, m.client, cfg, "tok-ops")
			if got := ic.do("incr", "probe", "1"); strings.HasPrefix(got, "ok") {
				found = m
				return true, ""
			}
		}
		return false, "no member accepts a write"
	})
	return found
}

// TestClusterGodistlockQuota: on a 3-member cluster with mutual TLS, a
// godistlock connection (identified by its client certificate) and a line
// connection (by token) of one identity share its locks quota on the
// leader: a TRY past it gets NO on a free key, as does the line's lock
// error_max_locks; an OFF makes room again. After the leader's SIGKILL the
// next leader's replica still counts the kept holds of both transports.
func TestClusterGodistlockQuota(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three server processes")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "policy")
	writeIsolationPolicy(t, file, clusterQuotaPolicy)
	ca := certtest.NewCA(t, "dflockd test CA")
	caFile := filepath.Join(dir, "clients.pem")
	certtest.WriteFile(t, caFile, ca.PEM())
	certFile, keyFile := ca.Leaf(t, "member").Write(t, dir)
	ms, gdOf := startIsolationMembers(t, true, "--policy-file", file,
		"--tls-cert", certFile, "--tls-key", keyFile, "--tls-client-ca", caFile)
	nw := &isoNet{t: t, cfg: certtest.ClientConfig(ca.Pool), scheme: "https://"}
	gdCfg := certtest.ClientConfig(ca.Pool)
	gdCfg.Certificates = []tls.Certificate{ca.ClientLeaf(t, "team-q.clients").TLS}

	members, httpOf := membersOf(ms)
	lead := httpOf[quotaLeader(t, members, nil, nw.cfg)]
	line := nw.line(lead, "tok-a")
	line.grant("l", "q/1", "0 300")
	gd := dialIso(t, gdOf[lead], gdCfg, "")
	if got := godistlockDo(t, gd, "TRY q/2 300000 n1"); !strings.HasPrefix(got, "GIVE n1 ") {
		t.Fatalf("on the leader %s: godistlock TRY q/2 under the quota: %q, want GIVE", lead.id, got)
	}
	// q/3 is free: a NO is the quota's (q/1 by the line, q/2 by
	// godistlock), and the line is refused as well.
	if got := godistlockDo(t, gd, "TRY q/3 300000 n2"); got != "NO n2" {
		t.Fatalf("on the leader %s: godistlock TRY q/3 past locks=2: %q, want NO", lead.id, got)
	}
	if got := line.do("l", "q/3", "0 300"); got != "error_max_locks" {
		t.Fatalf("on the leader %s: l q/3 past locks=2: %q, want error_max_locks", lead.id, got)
	}
	// OFF answers nothing; the TRY behind it is answered after it
	// applied, with the room it made.
	godistlockSend(t, gd, "OFF q/2 n3")
	if got := godistlockDo(t, gd, "TRY q/3 300000 n4"); !strings.HasPrefix(got, "GIVE n4 ") {
		t.Fatalf("on the leader %s: TRY q/3 after OFF q/2: %q, want GIVE", lead.id, got)
	}

	// The leader dies: the holds of its connections (q/1 by the line,
	// q/3 by godistlock) are kept until their leases end, and counted.
	lead.member.signal(syscall.SIGKILL)
	next := httpOf[quotaLeader(t, members, lead.member, nw.cfg)]
	t.Logf("leader %s killed; %s leads", lead.id, next.id)
	gd2 := dialIso(t, gdOf[next], gdCfg, "")
	if got := godistlockDo(t, gd2, "TRY q/4 300000 n5"); got != "NO n5" {
		t.Fatalf("after the failover, on %s: godistlock TRY q/4: %q, want NO (q/1 and q/3 are still held)", next.id, got)
	}
	if got := nw.line(next, "tok-a").do("l", "q/4", "0 300"); got != "error_max_locks" {
		t.Fatalf("after the failover, on %s: l q/4: %q, want error_max_locks", next.id, got)
	}
}

// godistlockSend writes one godistlock request line.
func godistlockSend(t *testing.T, gd *isoConn, line string) {
	t.Helper()
	_ = gd.c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(gd.c, line+"\n"); err != nil {
		t.Fatalf("godistlock %s: %v", line, err)
	}
}

// godistlockDo writes one godistlock request line and reads its answer.
func godistlockDo(t *testing.T, gd *isoConn, line string) string {
	t.Helper()
	godistlockSend(t, gd, line)
	got, err := gd.rd.ReadString('\n')
	if err != nil {
		t.Fatalf("godistlock %s: %v", line, err)
	}
	return strings.TrimSuffix(got, "\n")
}
