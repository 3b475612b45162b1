package main

import (
	"strings"
	"testing"
)

// TestConfigClusterForward: --cluster-forward and DFLOCKD_CLUSTER_FORWARD,
// a boolean of cluster mode only.
func TestConfigClusterForward(t *testing.T) {
	token := strings.Repeat("t", 32)
	base := []string{"--raft-dir", "/var/lib/dflockd", "--node-id", "n1", "--raft-addr", "127.0.0.1:7001",
		"--cluster-peers", "n1=127.0.0.1:7001@127.0.0.1:6388", "--raft-auth-token", token}
	if cfg, _ := mustLoad(t, base, nil); cfg.Cluster.Forward {
		t.Fatal("--cluster-forward is on by default")
	}
	if cfg, _ := mustLoad(t, append(base, "--cluster-forward"), nil); !cfg.Cluster.Forward {
		t.Fatal("--cluster-forward did not turn forwarding on")
	}
	if cfg, _ := mustLoad(t, base, map[string]string{"DFLOCKD_CLUSTER_FORWARD": "yes"}); !cfg.Cluster.Forward {
		t.Fatal("DFLOCKD_CLUSTER_FORWARD=yes did not turn forwarding on")
	}
	// The flag beats the variable.
	if cfg, _ := mustLoad(t, append(base, "--cluster-forward=false"), map[string]string{"DFLOCKD_CLUSTER_FORWARD": "1"}); cfg.Cluster.Forward {
		t.Fatal("--cluster-forward=false lost to DFLOCKD_CLUSTER_FORWARD=1")
	}
	// Off, it needs nothing; on, it needs cluster mode.
	mustLoad(t, []string{"--cluster-forward=false"}, map[string]string{"DFLOCKD_CLUSTER_FORWARD": "no"})
	wantErr(t, []string{"--cluster-forward"}, nil, "--cluster-forward needs --raft-dir (cluster mode)")
	wantErr(t, nil, map[string]string{"DFLOCKD_CLUSTER_FORWARD": "true"}, "--cluster-forward needs --raft-dir")
	wantErr(t, []string{"--cluster-forward", "--node-id", "n1"}, nil,
		"--cluster-forward needs --raft-dir", "--node-id, --raft-addr, --raft-bind, --cluster-peers and --cluster-bootstrap need --raft-dir")
	wantErr(t, append(base, "--cluster-forward=maybe"), nil, "--cluster-forward must be a boolean")
	wantErr(t, base, map[string]string{"DFLOCKD_CLUSTER_FORWARD": "maybe"}, "DFLOCKD_CLUSTER_FORWARD must be a boolean")
}
