package suite

import (
	"bytes"
	"fmt"
	"strings"
)

// SummarySection is the one-screen table at the top of PERF.md: every
// acceptance target of issue #21 with the figure the newest results on
// disk give for it. Every run rewrites it from the results files, and
// --summary-only does so without running anything.
var SummarySection = Section{"<!-- suite:summary:begin -->", "<!-- suite:summary:end -->"}

// Target names the summary looks for in the results, beside the suite's
// own servers.
const (
	TargetBefore = "before"  // c44aed8's binary: --target before=ADDR
	TargetV110   = "v1.10.0" // dflockd v1.10.0: --target v1.10.0=ADDR
)

// The summary's shapes: 50 connections unless a target says otherwise.
const (
	sumConns    = 50
	sumDepth    = 16
	memLocks    = 100000 // held-locks scenario the per-lock target is about
	memLockConn = 100
	scalingHost = 16 // cores of the host the scaling targets are set for
)

const suiteCmd = "go run ./benchmarks/cmd/dflocksuite"

// SummaryRow is one target: the figure measured, whether it meets the
// target, and the results file it comes from (nil when not measured).
type SummaryRow struct {
	What      string
	Target    string
	Measured  string // the figure, or "not measured: why"
	Met       string // "yes", "no" or "–"
	From      *RunFile
	Reproduce string // the command that measures it
}

// Summary computes every row from res; a figure the results do not hold
// is "not measured", with the command that would measure it.
func Summary(res Results) []SummaryRow {
	core, prim, cl, sc := res[KindCore], res[KindPrimitives], res[KindCluster], res[KindScaling]
	lockCmd := suiteCmd + " --workloads lock --conns 50 --depth 16"
	var rows []SummaryRow

	// Lock+release, depth 16, 50 conns: CPU vs the ceiling, pairs vs
	// before and vs Redis with a plain DEL.
	lockCell := func(target string) (Cell, bool) {
		if core == nil {
			return Cell{}, false
		}
		c, ok := Cells(core.Runs)[CellKey{target, "lock", sumConns, sumDepth}]
		return c, ok
	}
	ng, ngOK := lockCell("ng")
	{
		r := SummaryRow{What: "lock+release, depth 16: server CPU per pair vs the no-logic ceiling", Target: "≤ 1.5×", Reproduce: lockCmd}
		ceil, ok := lockCell("ceiling")
		if ngOK && ok && ng.CPUPerPair.N > 0 && ceil.CPUPerPair.N > 0 {
			v := ng.CPUPerPair.Median / ceil.CPUPerPair.Median
			r.set(core, fmt.Sprintf("**%.2f×** (%.2f vs %.2f µs)", v, ng.CPUPerPair.Median/1e3, ceil.CPUPerPair.Median/1e3), v <= 1.5)
		} else {
			r.notMeasured("no ng and ceiling server CPU at 50 conns × depth 16 " + where(core, "lock results"))
		}
		rows = append(rows, r)
	}
	rows = append(rows, pairsRatio(core, ng, ngOK, lockCell, TargetBefore,
		"lock+release, depth 16: pairs/s vs c44aed8's binary (`before`)", 1.15,
		lockCmd+" --target before=ADDR",
		"no `before` target (c44aed8's dflockd, `--loops 1`, listening at ADDR, pinned to the server CPU) "+where(core, "lock results")))
	rows = append(rows, pairsRatio(core, ng, ngOK, lockCell, "redis-del",
		"lock+release, depth 16: pairs/s vs Redis `SET NX PX` + `DEL`", 2,
		lockCmd, "no ng and redis-del pairs at 50 conns × depth 16 "+where(core, "lock results")))

	// Primitives against Redis.
	{
		r := SummaryRow{What: "incr, kset/kget, rpush/lpop, depth 16: ops/s vs Redis's", Target: "≥ 1.5× each",
			Reproduce: suiteCmd + " --workloads incr,kv,list --prim-conns 50"}
		var parts, missing []string
		met := true
		for _, w := range []string{"incr", "kv", "list"} {
			var n, o Cell
			var ok1, ok2 bool
			if prim != nil {
				cells := Cells(prim.Runs)
				n, ok1 = cells[CellKey{"ng", w, sumConns, sumDepth}]
				o, ok2 = cells[CellKey{"redis", w, sumConns, sumDepth}]
			}
			if !ok1 || !ok2 || o.Ops.Median <= 0 {
				missing = append(missing, w)
				continue
			}
			v := n.Ops.Median / o.Ops.Median
			met = met && v >= 1.5
			parts = append(parts, fmt.Sprintf("%s **%.2f×**", w, v))
		}
		switch {
		case len(parts) == 0:
			r.notMeasured("no ng and redis primitives at 50 conns × depth 16 " + where(prim, "primitives results"))
		case len(missing) > 0:
			r.set(prim, strings.Join(parts, ", ")+"; not measured: "+strings.Join(missing, ", "), false)
			r.Met = "–"
		default:
			r.set(prim, strings.Join(parts, ", "), met)
		}
		rows = append(rows, r)
	}

	// Memory.
	{
		r := SummaryRow{What: "RSS per held lock (100 k locks, 100 conns)", Target: "≤ 160 B", Reproduce: suiteCmd + " --workloads lock"}
		r2 := SummaryRow{What: "idle RSS at startup", Target: "≤ 8 MiB", Reproduce: r.Reproduce}
		var held *MemResult
		if core != nil {
			for i, m := range core.Memory {
				if m.Target == "ng" && m.Scenario == ScenLocks {
					held = &core.Memory[i]
					break
				}
			}
		}
		if held == nil {
			r.notMeasured("no ng held-locks scenario " + where(core, "lock results"))
			r2.notMeasured("no ng memory scenario " + where(core, "lock results"))
		} else {
			shape := ""
			if held.Items != memLocks || held.Conns != memLockConn {
				shape = fmt.Sprintf(" (at %d locks, %d conns)", held.Items, held.Conns)
			}
			r.set(core, fmt.Sprintf("**%.0f B**%s", held.PerItem, shape), held.PerItem <= 160)
			r2.set(core, fmt.Sprintf("**%s** (freshly started, before the held-locks scenario)", fmtBytes(float64(held.Before))), held.Before <= 8<<20)
		}
		rows = append(rows, r, r2)
	}

	// Hot key: server CPU per hand-off against v1.10.0's.
	{
		r := SummaryRow{What: "hot key, 50 conns: server CPU per hand-off vs v1.10.0's", Target: "≤ 0.35×",
			Reproduce: suiteCmd + " --workloads hot --hot-conns 50 --target v1.10.0=ADDR@PID   # dflockd v1.10.0 listening at ADDR, its process id PID, pinned to the server CPU"}
		var n, o Cell
		var ok1, ok2 bool
		if core != nil {
			cells := Cells(core.Runs)
			n, ok1 = cells[CellKey{"ng", "hot", sumConns, 1}]
			o, ok2 = cells[CellKey{TargetV110, "hot", sumConns, 1}]
		}
		switch {
		case !ok2:
			r.notMeasured("no `v1.10.0` target (dflockd v1.10.0) at 50 conns " + where(core, "hot-key results"))
		case !ok1 || n.CPUPerPair.N == 0 || o.CPUPerPair.N == 0:
			r.notMeasured("server CPU of ng or `v1.10.0` not recorded (`--target v1.10.0=ADDR` without `@PID`) " + where(core, "hot-key results"))
		default:
			v := n.CPUPerPair.Median / o.CPUPerPair.Median
			r.set(core, fmt.Sprintf("**%.2f×** (%.1f vs %.1f µs)", v, n.CPUPerPair.Median/1e3, o.CPUPerPair.Median/1e3), v <= 0.35)
		}
		rows = append(rows, r)
	}

	rows = append(rows, clusterRows(cl)...)
	rows = append(rows, scalingRows(sc)...)
	return rows
}

// pairsRatio is ng's pairs/s over other's at 50 conns × depth 16.
func pairsRatio(core *RunFile, ng Cell, ngOK bool, cell func(string) (Cell, bool), other, what string, goal float64, cmd, why string) SummaryRow {
	r := SummaryRow{What: what, Target: fmt.Sprintf("≥ %g×", goal), Reproduce: cmd}
	o, ok := cell(other)
	if !ngOK || !ok || o.Pairs.Median <= 0 {
		r.notMeasured(why)
		return r
	}
	v := ng.Pairs.Median / o.Pairs.Median
	r.set(core, fmt.Sprintf("**%.2f×** (%s vs %s pairs/s)", v, FmtRate(ng.Pairs.Median), FmtRate(o.Pairs.Median)), v >= goal)
	return r
}

func clusterRows(cl *RunFile) []SummaryRow {
	cmd := suiteCmd + " --workloads cluster"
	single := SummaryRow{What: "3-member cluster (one core) vs single node, depth 16", Target: "≥ 25 %", Reproduce: cmd}
	etcd := SummaryRow{What: "3-member cluster vs 3-member etcd, depth 1", Target: "≥ 10×", Reproduce: cmd}
	fail := SummaryRow{What: "failover: `kill -9` of the leader → first accepted write", Target: "≤ 1 s", Reproduce: cmd}
	var c *ClusterResult
	if cl != nil {
		c = cl.Cluster
	}
	if c == nil {
		single.notMeasured("no cluster results")
		etcd.notMeasured("no cluster results")
		fail.notMeasured("no cluster results")
		return []SummaryRow{single, etcd, fail}
	}
	cells := Cells(c.Runs)
	ratio := func(other string, depth int) (float64, Cell, Cell, bool) {
		a, ok1 := cells[CellKey{ClusterLeader, "lock", c.Conns, depth}]
		b, ok2 := cells[CellKey{other, "lock", c.Conns, depth}]
		if !ok1 || !ok2 || b.Pairs.Median <= 0 {
			return 0, a, b, false
		}
		return a.Pairs.Median / b.Pairs.Median, a, b, true
	}
	at := ""
	if c.Conns != sumConns {
		at = fmt.Sprintf(" at %d conns", c.Conns)
	}
	if v, a, b, ok := ratio(ClusterSingle, sumDepth); ok {
		single.set(cl, fmt.Sprintf("**%.1f %%** (%s vs %s pairs/s)%s", 100*v, FmtRate(a.Pairs.Median), FmtRate(b.Pairs.Median), at), v >= clusterVsSingleGoal)
	} else {
		single.notMeasured("no cluster and single rows at depth 16 " + where(cl, "cluster results"))
	}
	if v, a, b, ok := ratio(ClusterEtcd, 1); ok {
		etcd.set(cl, fmt.Sprintf("**%.1f×** (%s vs %s pairs/s)%s", v, FmtRate(a.Pairs.Median), FmtRate(b.Pairs.Median), at), v >= clusterVsEtcdGoal)
	} else {
		etcd.notMeasured("no cluster and etcd3 rows at depth 1 (etcd unavailable, or --no-etcd) " + where(cl, "cluster results"))
	}
	if len(c.Failover) > 0 {
		m := c.FailoverMedian()
		fail.set(cl, fmt.Sprintf("**%s** (median of %d)", FmtNs(m), len(c.Failover)), m <= 1e9)
	} else {
		fail.notMeasured("no failover trial " + where(cl, "cluster results"))
	}
	return []SummaryRow{single, etcd, fail}
}

func scalingRows(sc *RunFile) []SummaryRow {
	cmd := suiteCmd + " --workloads scaling   # on a 16-core host"
	loops := SummaryRow{What: "scaling: 8 loops vs 1 loop (every shape)", Target: "≥ 6×", Reproduce: cmd}
	redis := SummaryRow{What: "scaling: 8 loops vs Redis, depth 1, 1000 conns", Target: "≥ 4×", Reproduce: cmd}
	var s *ScalingSummary
	if sc != nil {
		s = sc.Scaling
	}
	if s == nil {
		loops.notMeasured("no scaling results")
		redis.notMeasured("no scaling results")
		return []SummaryRow{loops, redis}
	}
	host := ""
	if c := sc.EnvValue("cores"); c != fmt.Sprint(scalingHost) {
		host = fmt.Sprintf(" (host of %s cores, not %d)", c, scalingHost)
	}
	cells := Cells(s.Runs)
	ratio := func(a, b string, sh Shape) (float64, bool) {
		x, ok1 := cells[CellKey{a, "lock", sh.Conns, sh.Depth}]
		y, ok2 := cells[CellKey{b, "lock", sh.Conns, sh.Depth}]
		if !ok1 || !ok2 || y.Pairs.Median <= 0 {
			return 0, false
		}
		return x.Pairs.Median / y.Pairs.Median, true
	}
	var parts []string
	met := true
	for _, sh := range s.Shapes {
		if v, ok := ratio("ng-8", "ng-1", sh); ok {
			parts = append(parts, fmt.Sprintf("%d×%d **%.2f×**", sh.Conns, sh.Depth, v))
			met = met && v >= 6
		}
	}
	if len(parts) > 0 {
		loops.set(sc, strings.Join(parts, "; ")+host, met)
	} else {
		loops.notMeasured("no ng-1 and ng-8 rows " + where(sc, "scaling results"))
	}
	if v, ok := ratio("ng-8", "redis", Shape{1000, 1}); ok {
		redis.set(sc, fmt.Sprintf("**%.2f×**%s", v, host), v >= 4)
	} else {
		redis.notMeasured("no ng-8 and redis rows at 1000 conns × depth 1 " + where(sc, "scaling results"))
	}
	return []SummaryRow{loops, redis}
}

func (r *SummaryRow) set(f *RunFile, measured string, met bool) {
	r.From, r.Measured, r.Met = f, measured, "no"
	if met {
		r.Met = "yes"
	}
}

// where names the results file a figure was looked for in: the newest
// of its kind, which may be a narrower run than an older one on disk.
func where(f *RunFile, what string) string {
	if f == nil {
		return "(no " + what + " file)"
	}
	return "in `" + f.Name + "`"
}

func (r *SummaryRow) notMeasured(why string) {
	r.From, r.Measured, r.Met = nil, "not measured: "+why, "–"
}

// SummaryMarkdown renders rows as the summary section's body: the table,
// then the runs its figures come from, then the commands for the rows not
// measured.
func SummaryMarkdown(rows []SummaryRow) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("## Summary (generated)\n\n")
	p("_Generated by `benchmarks/cmd/dflocksuite` from the raw results in `benchmarks/results/` at the end of every run, or by `--summary-only`; do not edit between the markers._\n\n")
	p("Each ratio is measured side by side in one run (its pinning: the environment table of its section below), at 50 connections unless the row says otherwise.\n\n")
	var runs []*RunFile
	ref := map[*RunFile]string{}
	for _, r := range rows {
		if r.From != nil && ref[r.From] == "" {
			runs = append(runs, r.From)
			ref[r.From] = fmt.Sprintf("[%c]", 'A'+len(runs)-1)
		}
	}
	p("| target | measured | goal | met | run |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		from := "–"
		if r.From != nil {
			from = ref[r.From]
		}
		p("| %s | %s | %s | %s | %s |\n", r.What, r.Measured, r.Target, r.Met, from)
	}
	if len(runs) > 0 {
		p("\nRuns:\n\n")
		for _, f := range runs {
			cmd := "command " + Unknown
			if f.Command != "" {
				cmd = "`" + f.Command + "`"
			}
			p("- %s `%s`: %s run, %s, commit %s, %s (%s cores); %s\n", ref[f], f.Name, f.Mode, f.EnvValue("date"),
				f.EnvValue("commit"), f.EnvValue("CPU"), f.EnvValue("cores"), cmd)
		}
	}
	var todo []string
	seen := map[string]bool{}
	for _, r := range rows {
		if r.From == nil && !seen[r.Reproduce] {
			seen[r.Reproduce] = true
			todo = append(todo, r.Reproduce)
		}
	}
	if len(todo) > 0 {
		p("\nTo measure what is not measured:\n\n```sh\n")
		for _, c := range todo {
			p("%s\n", c)
		}
		p("```\n")
	}
	return b.Bytes()
}

// WriteSummary rebuilds the summary section of the PERF.md at perfPath
// from the results files in resultsDir and returns its body.
func WriteSummary(perfPath, resultsDir string) ([]byte, error) {
	res, err := LoadResults(resultsDir)
	if err != nil {
		return nil, err
	}
	body := SummaryMarkdown(Summary(res))
	return body, SummarySection.Write(perfPath, body)
}
