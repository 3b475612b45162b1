package suite

import (
	"strings"
	"testing"
)

// The cluster table puts the ratios on the cluster's rows, judges the
// targets (10× etcd3 at every depth, 25 % of the single node at the
// deepest pipeline) and reports the median failover.
func TestClusterTable(t *testing.T) {
	rec := func(target string, depth, rep int, pairs float64, p50, p99 int64) Record {
		return Record{Target: target, Workload: "lock", Conns: 50, Depth: depth, Rep: rep, PairsPerS: pairs, P50Ns: p50, P99Ns: p99}
	}
	res := &ClusterResult{Conns: 50, Runs: []Record{
		rec(ClusterSingle, 1, 1, 40000, 1e6, 2e6), rec(ClusterLeader, 1, 1, 4000, 6e6, 20e6), rec(ClusterEtcd, 1, 1, 500, 50e6, 90e6),
		rec(ClusterSingle, 16, 1, 300000, 2e6, 4e6), rec(ClusterLeader, 16, 1, 90000, 8e6, 30e6), rec(ClusterEtcd, 16, 1, 8000, 80e6, 200e6),
		rec(ClusterSingle, 16, 2, 200000, 2e6, 4e6), rec(ClusterLeader, 16, 2, 60000, 8e6, 30e6), rec(ClusterEtcd, 16, 2, 4000, 80e6, 200e6),
	}, Failover: []FailoverTrial{{"n1", "n2", 2.5e9}, {"n2", "n3", 1.9e9}, {"n3", "n1", 2.1e9}}}
	res.Runs[1].CPUPerPairNs = 120e3
	md := string((&Report{Title: "t", Subject: ClusterLeader, Cluster: res}).Markdown())
	for _, want := range []string{
		"| target | depth | pairs/s | p50 | p99 | server CPU per pair | cluster/single | cluster/etcd3 |",
		"| single | 1 | 40.0k | 1.00 ms | 2.00 ms | – |  |  |",
		"| cluster | 1 | 4.00k | 6.00 ms | 20.0 ms | 120 µs | 10.0 % | 8.00× |",
		"| cluster | 16 | 75.0k (60.0k–90.0k) | 8.00 ms | 30.0 ms | – | 30.0 % | 12.50× |", // medians of 2 repetitions
		"| etcd3 | 16 | 6.00k (4.00k–8.00k) |",
		"Target cluster ≥ 10× etcd3: depth 1 8.00× (not met), depth 16 12.50× (met).",
		"Target cluster ≥ 25.0 % of the single node's pipelined rate (depth 16): 30.0 % (met).",
		"**2.10 s**, median of 3 trial(s): n1 killed, n2 granted after 2.50 s;",
		"over 2 repetition(s)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}

	// etcd3 unavailable, no failover trial: dashes and a reason, no verdict on etcd3.
	res = &ClusterResult{Conns: 50, Runs: []Record{rec(ClusterSingle, 1, 1, 40000, 1e6, 2e6), rec(ClusterLeader, 1, 1, 4000, 6e6, 20e6)},
		FailoverNote: "(Trial 1 of 1 failed: boom.)"}
	md = string((&Report{Title: "t", Subject: ClusterLeader, Cluster: res}).Markdown())
	for _, want := range []string{"| etcd3 | 1 | – | – | – | – | | |", "| cluster | 1 | 4.00k | 6.00 ms | 20.0 ms | – | 10.0 % | – |", "Failover: not measured. (Trial 1 of 1 failed: boom.)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Target cluster ≥ 10×") || strings.Contains(md, "pipelined rate") {
		t.Errorf("verdict without the figures:\n%s", md)
	}
	if md := string((&Report{Title: "t", Cluster: &ClusterResult{Conns: 50}}).Markdown()); !strings.Contains(md, "No run of the cluster comparison completed.") {
		t.Errorf("empty result:\n%s", md)
	}
}
