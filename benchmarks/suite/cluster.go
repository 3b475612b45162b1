package suite

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Targets of the cluster comparison, in table order.
const (
	ClusterSingle = "single"  // one dflockd-ng, no raft
	ClusterLeader = "cluster" // the leader of a 3-member dflockd-ng cluster
	ClusterEtcd   = "etcd3"   // a 3-member etcd cluster, concurrency.Mutex
)

// The acceptance targets of issue #12 that the comparison checks.
const (
	clusterVsEtcdGoal   = 10.0 // cluster pairs/s ≥ 10× etcd3's, at every depth
	clusterVsSingleGoal = 0.25 // cluster pairs/s ≥ 25 % of the single node's pipelined rate
)

// FailoverTrial is one kill -9 of a cluster's leader.
type FailoverTrial struct {
	Killed    string `json:"killed"`      // member id of the leader killed
	NewLeader string `json:"new_leader"`  // member that granted the first write after it
	Ns        int64  `json:"failover_ns"` // SIGKILL sent → that grant read by the client
}

// ClusterResult is the cluster comparison: lock+release at Conns
// connections and each depth against the three targets, then failover
// trials of the cluster.
type ClusterResult struct {
	Conns        int             `json:"conns"`
	Runs         []Record        `json:"runs"`
	Failover     []FailoverTrial `json:"failover"`
	FailoverNote string          `json:"failover_note,omitempty"` // why there are fewer trials than asked
}

// FailoverMedian is the median failover time in ns, 0 with no trial.
func (c *ClusterResult) FailoverMedian() float64 {
	xs := make([]float64, len(c.Failover))
	for i, f := range c.Failover {
		xs[i] = float64(f.Ns)
	}
	return Aggregate(xs).Median
}

// clusterMarkdown renders the comparison: one row per target and depth,
// the ratios on the cluster's rows, whether the targets are met, and the
// failover time.
func (r *Report) clusterMarkdown(b *bytes.Buffer) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	c := r.Cluster
	cells := Cells(c.Runs)
	var depths []int
	reps := 0
	for _, rec := range c.Runs {
		if !slices.Contains(depths, rec.Depth) {
			depths = append(depths, rec.Depth)
		}
		reps = max(reps, rec.Rep)
	}
	slices.Sort(depths)
	if len(depths) == 0 {
		p("No run of the cluster comparison completed.\n\n")
		return
	}
	cell := func(target string, depth int) (Cell, bool) {
		x, ok := cells[CellKey{target, "lock", c.Conns, depth}]
		return x, ok && x.Pairs.Median > 0
	}
	ratio := func(other string, depth int) (float64, bool) {
		cl, ok1 := cell(ClusterLeader, depth)
		o, ok2 := cell(other, depth)
		if !ok1 || !ok2 {
			return 0, false
		}
		return cl.Pairs.Median / o.Pairs.Median, true
	}
	p("### 3-member cluster vs single node vs 3-member etcd, lock+release, %d connections\n\n", c.Conns)
	p("Pairs/s = acquire+release cycles per second, median (min–max) over %d repetition(s); p50, p99 = per-request latency, "+
		"medians of the repetitions'; server CPU per pair = all the target's processes together (the three members of a cluster), median.\n\n", reps)
	p("| target | depth | pairs/s | p50 | p99 | server CPU per pair | cluster/single | cluster/etcd3 |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range depths {
		for _, t := range []string{ClusterSingle, ClusterLeader, ClusterEtcd} {
			x, ok := cells[CellKey{t, "lock", c.Conns, d}]
			if !ok {
				p("| %s | %d | – | – | – | – | | |\n", t, d)
				continue
			}
			cpu := "–"
			if x.CPUPerPair.N > 0 {
				cpu = FmtNs(x.CPUPerPair.Median)
			}
			vsSingle, vsEtcd := "", ""
			if t == ClusterLeader {
				vsSingle, vsEtcd = "–", "–"
				if v, ok := ratio(ClusterSingle, d); ok {
					vsSingle = fmtPercent(v)
				}
				if v, ok := ratio(ClusterEtcd, d); ok {
					vsEtcd = fmt.Sprintf("%.2f×", v)
				}
			}
			p("| %s | %d | %s | %s | %s | %s | %s | %s |\n", t, d, fmtStat(x.Pairs, FmtRate),
				FmtNs(x.P50.Median), FmtNs(x.P99.Median), cpu, vsSingle, vsEtcd)
		}
	}
	p("\n")
	// The targets: every depth against etcd3, the deepest pipeline (the
	// group commit's case) against the single node.
	var verdicts, vsEtcd []string
	for _, d := range depths {
		if v, ok := ratio(ClusterEtcd, d); ok {
			vsEtcd = append(vsEtcd, fmt.Sprintf("depth %d %.2f× (%s)", d, v, metWord(v >= clusterVsEtcdGoal)))
		}
	}
	if len(vsEtcd) > 0 {
		verdicts = append(verdicts, fmt.Sprintf("Target cluster ≥ %.0f× etcd3: %s.", clusterVsEtcdGoal, strings.Join(vsEtcd, ", ")))
	}
	if d := depths[len(depths)-1]; d > 1 {
		if v, ok := ratio(ClusterSingle, d); ok {
			verdicts = append(verdicts, fmt.Sprintf("Target cluster ≥ %s of the single node's pipelined rate (depth %d): %s (%s).",
				fmtPercent(clusterVsSingleGoal), d, fmtPercent(v), metWord(v >= clusterVsSingleGoal)))
		}
	}
	if len(verdicts) > 0 {
		p("%s\n\n", strings.Join(verdicts, " "))
	}
	if len(c.Failover) == 0 {
		p("Failover: not measured. %s\n\n", c.FailoverNote)
		return
	}
	var trials []string
	for _, f := range c.Failover {
		trials = append(trials, fmt.Sprintf("%s killed, %s granted after %s", f.Killed, f.NewLeader, FmtNs(float64(f.Ns))))
	}
	p("Failover (`kill -9` of the leader → the first try-lock on a fresh key that another member grants; each other member polled every 10 ms, "+
		"no redirect followed): **%s**, median of %d trial(s): %s.", FmtNs(c.FailoverMedian()), len(c.Failover), strings.Join(trials, "; "))
	if c.FailoverNote != "" {
		p(" %s", c.FailoverNote)
	}
	p("\n\n")
}

// fmtPercent formats a ratio as a percentage with three significant figures.
func fmtPercent(v float64) string {
	return strconv.FormatFloat(v*100, 'f', sig(v*100), 64) + " %"
}

func metWord(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
