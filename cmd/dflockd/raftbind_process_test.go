package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigRaftBind: --raft-bind (or DFLOCKD_RAFT_BIND) is read in
// cluster mode and, like the other cluster settings, stops a server that
// has no --raft-dir.
func TestConfigRaftBind(t *testing.T) {
	base := []string{"--raft-dir", "/var/lib/dflockd", "--node-id", "n1", "--raft-addr", "n1.example.invalid:7001",
		"--cluster-peers", "n1=n1.example.invalid:7001@n1.example.invalid:6388", "--raft-auth-token", strings.Repeat("t", 32)}
	if cfg, _ := mustLoad(t, append(base, "--raft-bind", ":7001"), nil); cfg.Cluster.RaftBind != ":7001" {
		t.Fatalf("--raft-bind :7001 read as %q", cfg.Cluster.RaftBind)
	}
	if cfg, _ := mustLoad(t, base, map[string]string{"DFLOCKD_RAFT_BIND": "0.0.0.0:7001"}); cfg.Cluster.RaftBind != "0.0.0.0:7001" {
		t.Fatalf("DFLOCKD_RAFT_BIND=0.0.0.0:7001 read as %q", cfg.Cluster.RaftBind)
	}
	wantErr(t, []string{"--raft-bind", ":7001"}, nil, "--raft-bind", "need --raft-dir")
}

// TestRaftBindAdvertisesUnresolvedName: a Kubernetes member advertises its
// stable DNS name (--raft-addr) before that name resolves, binding its
// interfaces with --raft-bind. Names under .invalid never resolve (RFC
// 6761): the member must start, lead its one-member cluster and tell raft
// the name, not the bound address (followers probe the leader's raft
// address as raft reports it: cluster/quickfailover.go).
func TestRaftBindAdvertisesUnresolvedName(t *testing.T) {
	bind := freeAddr(t)
	_, raftPort, _ := net.SplitHostPort(bind)
	name := "dflockd-0.dflockd-peers.example.invalid:" + raftPort
	m := &member{t: t, id: "dflockd-0", client: freeAddr(t)}
	_, port, _ := net.SplitHostPort(m.client)
	m.args = []string{"--host", "127.0.0.1", "--port", port, "--raft-dir", filepath.Join(t.TempDir(), m.id),
		"--node-id", m.id, "--raft-addr", name, "--raft-bind", bind,
		"--cluster-peers", m.id + "=" + name + "@" + m.client, "--cluster-bootstrap",
		"--raft-auth-token", strings.Repeat("k", 40), "--shutdown-timeout", "1"}
	m.start()
	if got := askLeader(t, []*member{m}, nil, "incr", "k8s", "1", 5*time.Second); got != "ok 1" {
		t.Fatalf("incr k8s 1 = %q, want ok 1", got)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(m.log.String(), "leader_raft_addr="+name) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("raft did not name the leader by its advertised address %s:\n%s", name, m.log.String())
		}
	}
	stats := ask(m.client, "stats", "_", "_", 5*time.Second)
	if !strings.Contains(stats, `"raft_addr":"`+name+`"`) {
		t.Fatalf("stats' voters do not list %s: %s", name, stats)
	}
}
