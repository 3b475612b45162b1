package main

// The scaling workload (--workloads scaling, issue #21 "Many cores"): the
// design promises that gnet loops over xxhash-sharded state use every core
// of a big host, where Redis uses one. On a 16-core host one dflockd-ng
// per loop count (--loops 1, 2, 4, 8) sits on cores 0–7 beside a
// single-threaded Redis and one with io-threads; the load generator, on
// cores 8–15, drives each in turn with lock+release pairs (the lock
// workload) at 1,000 connections × depth 1 and 200 × depth 16. The report
// gives every row's ratio to one loop and to the single-threaded Redis,
// and checks the two targets.
//
// It runs alone (its CPU sets are not the other workloads'), and can run
// from prebuilt static binaries on a host with no Go toolchain, no
// network and no redis-server: benchmarks/scaling holds the scripts.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// scalingSection is the part of PERF.md the scaling workload rewrites.
var scalingSection = suite.Section{Begin: "<!-- suite:scaling:begin -->", End: "<!-- suite:scaling:end -->"}

// The acceptance targets of issue #21.
const (
	goalLoops      = 8   // the loop count both targets are about
	goalVsOneLoop  = 6.0 // pairs/s at goalLoops ≥ 6× one loop's, at every shape
	goalVsRedis    = 4.0 // pairs/s at goalLoops ≥ 4× single-threaded Redis's at goalRedisShape
	goalRedisConns = 1000
	goalRedisDepth = 1
)

// Bounds of the scaling flags.
const (
	maxShapeDepth   = 4096 // the load generator's own bound
	maxRedisThreads = 128  // Redis refuses more io-threads
	// fileSlack is the descriptors the generator needs beyond its
	// connections: the runtime, /proc reads, the servers' pipes.
	fileSlack = 256
	// nearFull: a generator this busy (of its CPUs) may be what limits a
	// row, which the report then says.
	nearFull = 0.9
)

// Target names of the scaling workload.
const scalingRedis = "redis" // single-threaded

func ngLoopsName(loops int) string   { return fmt.Sprintf("ng-%d", loops) }
func redisIOName(threads int) string { return fmt.Sprintf("redis-io%d", threads) }

// shape is one load of the lock workload: connections × pipeline depth.
type shape struct {
	Conns int `json:"conns"`
	Depth int `json:"depth"`
}

func (sh shape) String() string { return fmt.Sprintf("%dx%d", sh.Conns, sh.Depth) }

// label is the shape as the report writes it.
func (sh shape) label() string { return fmt.Sprintf("%d×%d", sh.Conns, sh.Depth) }

// parseShapes reads --scaling-shapes: a comma list of CONNSxDEPTH.
func parseShapes(list string) ([]shape, error) {
	var out []shape
	for _, f := range strings.Split(list, ",") {
		c, d, ok := strings.Cut(strings.TrimSpace(f), "x")
		conns, err1 := strconv.Atoi(c)
		depth, err2 := strconv.Atoi(d)
		if !ok || err1 != nil || err2 != nil || conns < 1 || conns > 20000 || depth < 1 || depth > maxShapeDepth {
			return nil, fmt.Errorf("--scaling-shapes: %q is not CONNSxDEPTH with 1 ≤ CONNS ≤ 20000, 1 ≤ DEPTH ≤ %d", f, maxShapeDepth)
		}
		sh := shape{conns, depth}
		if slices.Contains(out, sh) {
			return nil, fmt.Errorf("--scaling-shapes: %s twice", sh)
		}
		out = append(out, sh)
	}
	return out, nil
}

// parseScaling reads the scaling flags into s. allowed, when not nil, is
// the CPUs this process may use: both CPU lists must lie in it (once the
// suite has re-executed itself pinned, it is only the client CPUs, so the
// check is made before).
func (s *runner) parseScaling(loops, shapes string, allowed []int) error {
	var err error
	if s.scalingLoops, err = parseInts("scaling-loops", loops); err != nil {
		return err
	}
	for i, n := range s.scalingLoops {
		if slices.Contains(s.scalingLoops[:i], n) {
			return fmt.Errorf("--scaling-loops: %d twice", n)
		}
	}
	if s.scalingShapes, err = parseShapes(shapes); err != nil {
		return err
	}
	if s.scalingRedisIO < 0 || s.scalingRedisIO == 1 || s.scalingRedisIO > maxRedisThreads {
		return fmt.Errorf("--scaling-redis-io-threads: %d is neither 0 (none) nor in [2, %d]", s.scalingRedisIO, maxRedisThreads)
	}
	srv, err := parseCPUList(s.scalingServerCPUs)
	if err != nil {
		return fmt.Errorf("--scaling-server-cpus: %w", err)
	}
	cli, err := parseCPUList(s.scalingClientCPUs)
	if err != nil {
		return fmt.Errorf("--scaling-client-cpus: %w", err)
	}
	for _, c := range srv {
		if slices.Contains(cli, c) {
			return fmt.Errorf("--scaling-server-cpus %s and --scaling-client-cpus %s share CPU %d: server and load generator would compete", s.scalingServerCPUs, s.scalingClientCPUs, c)
		}
	}
	if allowed == nil {
		return nil
	}
	for _, c := range append(srv, cli...) {
		if !slices.Contains(allowed, c) {
			return fmt.Errorf("--scaling-server-cpus %s / --scaling-client-cpus %s: CPU %d is not available here (this process may use CPU %s)",
				s.scalingServerCPUs, s.scalingClientCPUs, c, fmtCPUList(allowed))
		}
	}
	return nil
}

// fmtCPUList writes sorted CPUs in taskset -c's syntax, runs as ranges.
func fmtCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// scalingResult is the workload's outcome, as kept in the raw JSON.
type scalingResult struct {
	ServerCPUs     string       `json:"server_cpus"` // empty: unpinned
	ClientCPUs     string       `json:"client_cpus"`
	Loops          []int        `json:"loops"`
	Shapes         []shape      `json:"shapes"`
	RedisIOThreads int          `json:"redis_io_threads,omitempty"`
	FileLimit      uint64       `json:"rlimit_nofile"`
	Notes          []string     `json:"notes"`
	Targets        []string     `json:"targets"` // row order
	Runs           []scalingRun `json:"runs"`
}

// scalingRun is one measured run: a suite.Record and what only this
// workload records.
type scalingRun struct {
	suite.Record
	Loops     int `json:"loops,omitempty"`            // dflockd-ng's --loops
	IOThreads int `json:"redis_io_threads,omitempty"` // a threaded Redis's io-threads
	// ClientCores is the load generator's CPU time over the window ÷ the
	// window: at its CPU count, the generator limits the row.
	ClientCores float64 `json:"client_cores"`
}

// scalingTarget is one server of the workload.
type scalingTarget struct {
	*target
	loops, ioThreads int
}

// scalingPhase starts every server at once (all idle but the one under
// load), then runs the jobs: repetitions outermost, then shapes, the
// servers interleaved within, so a slow drift of the host touches all.
func (s *runner) scalingPhase(ctx context.Context) (*scalingResult, error) {
	most := 0
	for _, sh := range s.scalingShapes {
		most = max(most, sh.Conns)
	}
	if need := uint64(most + fileSlack); s.fileLimit < need {
		return nil, fmt.Errorf("RLIMIT_NOFILE is %d, %d connections need %d: raise ulimit -n (or run as root, which lets the suite raise it)", s.fileLimit, most, need)
	}
	res := &scalingResult{ServerCPUs: s.serverCPUs, ClientCPUs: s.clientCPUs, Loops: s.scalingLoops, Shapes: s.scalingShapes, FileLimit: s.fileLimit}
	var ts []scalingTarget
	for _, n := range s.scalingLoops {
		p, err := s.startNGLoops(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("dflockd-ng --loops %d: %w", n, err)
		}
		ts = append(ts, scalingTarget{&target{name: ngLoopsName(n), addr: p.addr, kind: "line", pid: p.pid}, n, 0})
	}
	built := "built from this tree"
	if s.dflockdBin != "" {
		built = "prebuilt (`--dflockd-bin`)"
	}
	res.Notes = append(res.Notes, fmt.Sprintf("`ng-N` = dflockd-ng %s with `--loops N --max-locks %d`, one server per loop count (N = %s), all started at the outset and idle but for their turn.",
		built, s.ngMaxLocks, joinInts(s.scalingLoops)))
	if s.noRedis {
		res.Notes = append(res.Notes, "Redis: not run (--no-redis).")
	} else {
		r, err := s.startRedis(ctx)
		if err != nil {
			return nil, fmt.Errorf("redis: %w (--no-redis skips it)", err)
		}
		ts = append(ts, scalingTarget{&target{name: scalingRedis, addr: r.addr, kind: "redis", release: loadgen.ReleaseDel, pid: r.pid}, 0, 0})
		io := ""
		if n := s.scalingRedisIO; n > 0 {
			r, err := s.startRedis(ctx, "--io-threads", strconv.Itoa(n), "--io-threads-do-reads", "yes")
			if err != nil {
				return nil, fmt.Errorf("redis with --io-threads %d: %w", n, err)
			}
			ts = append(ts, scalingTarget{&target{name: redisIOName(n), addr: r.addr, kind: "redis", release: loadgen.ReleaseDel, pid: r.pid}, 0, n})
			res.RedisIOThreads = n
			io = fmt.Sprintf("; `%s` = the same with `--io-threads %d --io-threads-do-reads yes` (the main thread and %d I/O threads)", redisIOName(n), n, n-1)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("`%s` = redis-server %s (persistence off), single-threaded%s. A pair there is `SET key value NX PX 30000` + plain `DEL` (the suite's `redis-del`), every run on keys of its own.",
			scalingRedis, redisVersion(s.redisPath), io))
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("Every server pinned to CPU %s; the load generator (this suite, GOMAXPROCS %d) to CPU %s: the lock workload, connections × depth requests in flight, one key per slot, every reply checked. "+
			"Server cores and generator cores = each one's CPU time over the window ÷ the window; a generator near its CPU count is what limits its row.",
			orAll(s.serverCPUs), runtime.GOMAXPROCS(0), orAll(s.clientCPUs)),
		fmt.Sprintf("RLIMIT_NOFILE %d for the suite and every server.", s.fileLimit))
	if shared := smtShared(s.serverCPUs, s.clientCPUs, readSiblings); len(shared) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("Server and load generator share physical cores (SMT siblings %s): they compete for them, so the figures understate what separate cores give.",
			strings.Join(shared, ", ")))
	}
	for _, t := range ts {
		res.Targets = append(res.Targets, t.name)
	}

	type sjob struct {
		t   scalingTarget
		sh  shape
		rep int
	}
	var jobs []sjob
	for rep := 1; rep <= s.reps; rep++ {
		for _, sh := range s.scalingShapes {
			for _, t := range ts {
				jobs = append(jobs, sjob{t, sh, rep})
			}
		}
	}
	start := time.Now()
	for i, j := range jobs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("interrupted: %w", err)
		}
		eta := ""
		if i > 0 {
			time.Sleep(s.settle)
			per := time.Since(start) / time.Duration(i)
			eta = fmt.Sprintf(", eta %v", (per * time.Duration(len(jobs)-i)).Round(time.Second))
		}
		fmt.Fprintf(s.stderr, "[scaling %d/%d] %s lock c=%d d=%d rep %d/%d (elapsed %v%s) … ", i+1, len(jobs), j.t.name,
			j.sh.Conns, j.sh.Depth, j.rep, s.reps, time.Since(start).Round(time.Second), eta)
		run, err := s.runScaling(ctx, j.t, j.sh, j.rep)
		if err != nil {
			fmt.Fprintln(s.stderr, "FAIL")
			return nil, fmt.Errorf("target %s, lock c=%d d=%d rep %d: %w", j.t.name, j.sh.Conns, j.sh.Depth, j.rep, err)
		}
		fmt.Fprintf(s.stderr, "%s pairs/s, p99 %s, server %.2f cores, generator %.2f cores\n", suite.FmtRate(run.PairsPerS),
			suite.FmtNs(float64(run.P99Ns)), run.Cores, run.ClientCores)
		res.Runs = append(res.Runs, run)
	}
	return res, nil
}

// startNGLoops starts a dflockd-ng like every other (ngArgs) but with
// --loops loops.
func (s *runner) startNGLoops(ctx context.Context, loops int) (*proc, error) {
	defer func(l int) { s.ngLoops = l }(s.ngLoops)
	s.ngLoops = loops
	return s.startNG(ctx, s.ngBin)
}

// runScaling is one run of the lock workload against t, measuring the
// server's and the load generator's CPU over the window.
func (s *runner) runScaling(ctx context.Context, t scalingTarget, sh shape, rep int) (scalingRun, error) {
	cfg := loadgen.Config{
		Name: t.name, Addr: t.addr, Proto: loadgen.ProtoLine,
		Workload: loadgen.Lock, Conns: sh.Conns, Depth: sh.Depth,
		Warmup: s.warmup, Duration: s.duration,
		KeyPrefix: "suite.scaling", RedisRelease: t.release,
	}
	if t.kind == "redis" {
		cfg.Proto = loadgen.ProtoRedis
	}
	server := &windowProbe{pids: []int{t.pid}}
	client := &windowProbe{pids: []int{os.Getpid()}}
	cfg.OnWindowStart = func() { server.take(&server.a); client.take(&client.a) }
	cfg.OnWindowEnd = func() { server.take(&server.b); client.take(&client.b) }
	ctx, cancel := context.WithTimeout(ctx, s.warmup+s.duration+time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return scalingRun{}, err
	}
	run := scalingRun{Record: suite.Record{
		Target: t.name, Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth, Rep: rep,
		PairsPerS: res.PairRate, ReqPerS: res.RequestRate,
		P50Ns: int64(res.Latency.P50), P99Ns: int64(res.Latency.P99), P999Ns: int64(res.Latency.P999), MaxNs: int64(res.Latency.Max),
	}, Loops: t.loops, IOThreads: t.ioThreads}
	if res.Pairs == 0 {
		return run, errors.New("no lock cycle completed in the window")
	}
	u, ok, err := server.usage()
	if err != nil {
		return run, fmt.Errorf("server measurement: %w", err)
	}
	if ok {
		run.CPUPerPairNs = float64(u.PerOp(res.Pairs))
		run.CPUPerReqNs = float64(u.PerOp(res.Requests))
		run.Cores = u.Cores
		run.RSSBytes = u.RSS
	}
	if u, ok, err := client.usage(); err == nil && ok {
		run.ClientCores = u.Cores
	}
	return run, nil
}

// smtShared lists the server CPUs that share a physical core with a
// client CPU, as "server/client" pairs; siblings(cpu) returns a CPU's
// thread siblings (itself included), nil where unknown.
func smtShared(server, client string, siblings func(int) []int) []string {
	srv, err1 := parseCPUList(server)
	cli, err2 := parseCPUList(client)
	if err1 != nil || err2 != nil {
		return nil
	}
	var out []string
	for _, c := range srv {
		for _, sib := range siblings(c) {
			if sib != c && slices.Contains(cli, sib) {
				out = append(out, fmt.Sprintf("%d/%d", c, sib))
			}
		}
	}
	return out
}

// readSiblings reads a CPU's thread siblings from sysfs.
func readSiblings(cpu int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu))
	if err != nil {
		return nil
	}
	sibs, err := parseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return nil
	}
	return sibs
}

func joinInts(xs []int) string {
	p := make([]string, len(xs))
	for i, x := range xs {
		p[i] = strconv.Itoa(x)
	}
	return strings.Join(p, ", ")
}

// scalingRow aggregates one target at one shape over the repetitions.
type scalingRow struct {
	cell                     suite.Cell
	serverCores, clientCores suite.Stat
}

// rows aggregates the runs by target and shape.
func (r *scalingResult) rows() map[suite.CellKey]scalingRow {
	recs := make([]suite.Record, len(r.Runs))
	type acc struct{ server, client []float64 }
	accs := map[suite.CellKey]*acc{}
	for i, run := range r.Runs {
		recs[i] = run.Record
		k := suite.CellKey{Target: run.Target, Workload: run.Workload, Conns: run.Conns, Depth: run.Depth}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
		}
		if run.Cores > 0 {
			a.server = append(a.server, run.Cores)
		}
		if run.ClientCores > 0 {
			a.client = append(a.client, run.ClientCores)
		}
	}
	out := map[suite.CellKey]scalingRow{}
	for k, c := range suite.Cells(recs) {
		out[k] = scalingRow{cell: c, serverCores: suite.Aggregate(accs[k].server), clientCores: suite.Aggregate(accs[k].client)}
	}
	return out
}

// ratio is a's median pairs/s over b's at sh, when both ran.
func (r *scalingResult) ratio(rows map[suite.CellKey]scalingRow, a, b string, sh shape) (float64, bool) {
	x, ok1 := rows[suite.CellKey{Target: a, Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth}]
	y, ok2 := rows[suite.CellKey{Target: b, Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth}]
	if !ok1 || !ok2 || y.cell.Pairs.Median <= 0 {
		return 0, false
	}
	return x.cell.Pairs.Median / y.cell.Pairs.Median, true
}

// markdown renders the section: rep's header and notes, one table per
// shape, the targets, then rep's charts and raw results.
func (r *scalingResult) markdown(rep *suite.Report) []byte {
	head := *rep
	head.Charts, head.RawPath = nil, ""
	var b bytes.Buffer
	b.Write(head.Markdown())
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	rows := r.rows()
	reps := 0
	for _, run := range r.Runs {
		reps = max(reps, run.Rep)
	}
	if len(r.Runs) == 0 {
		p("No run of the scaling workload completed.\n\n")
	}
	one := ngLoopsName(1)
	clientCPUs := 0
	if cpus, err := parseCPUList(r.ClientCPUs); err == nil {
		clientCPUs = len(cpus)
	}
	var bound []string
	for _, sh := range r.Shapes {
		if len(r.Runs) == 0 {
			break
		}
		p("### lock+release, %d connections × depth %d\n\n", sh.Conns, sh.Depth)
		p("Pairs/s = acquire+release cycles per second, median (min–max) over %d repetition(s); p50, p99 = per-request latency, medians of the repetitions'; "+
			"server CPU per pair, server and generator cores: medians. vs %s, vs %s = pairs/s over theirs.\n\n", reps, one, scalingRedis)
		p("| target | loops / threads | pairs/s | p50 | p99 | server CPU per pair | server cores | generator cores | vs %s | vs %s |\n", one, scalingRedis)
		p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, name := range r.Targets {
			row, ok := rows[suite.CellKey{Target: name, Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth}]
			threads := r.threadsOf(name)
			if !ok {
				p("| %s | %s | – | – | – | – | – | – | | |\n", name, threads)
				continue
			}
			vsOne, vsRedis := "", ""
			if strings.HasPrefix(name, "ng-") {
				vsOne = "–"
				if v, ok := r.ratio(rows, name, one, sh); ok {
					vsOne = fmt.Sprintf("%.2f×", v)
				}
			}
			if name != scalingRedis {
				vsRedis = "–"
				if v, ok := r.ratio(rows, name, scalingRedis, sh); ok {
					vsRedis = fmt.Sprintf("%.2f×", v)
				}
			}
			c := row.cell
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, threads, fmtPairs(c.Pairs), suite.FmtNs(c.P50.Median), suite.FmtNs(c.P99.Median),
				fmtStatWith(c.CPUPerPair, suite.FmtNs), fmtStatWith(row.serverCores, fmtCores), fmtStatWith(row.clientCores, fmtCores), vsOne, vsRedis)
			if clientCPUs > 0 && row.clientCores.N > 0 && row.clientCores.Median >= nearFull*float64(clientCPUs) {
				bound = append(bound, fmt.Sprintf("%s at %s (%.2f of %d cores)", name, sh.label(), row.clientCores.Median, clientCPUs))
			}
		}
		p("\n")
	}
	if len(r.Runs) > 0 {
		p("%s\n\n", strings.Join(r.verdicts(rows), " "))
	}
	if len(bound) > 0 {
		p("The load generator was near its CPUs' capacity for %s: there the figure is a lower bound of what the server can do.\n\n", strings.Join(bound, ", "))
	}
	if len(rep.Charts) > 0 {
		p("### Charts\n\n")
		for _, c := range rep.Charts {
			p("![%s](%s)\n\n", c.Title, c.Path)
		}
	}
	if rep.RawPath != "" {
		p("Raw results: [`%s`](%s)\n", rep.RawPath, rep.RawPath)
	}
	return b.Bytes()
}

// fmtStatWith formats a median, "–" when nothing was measured.
func fmtStatWith(st suite.Stat, f func(float64) string) string {
	if st.N == 0 {
		return "–"
	}
	return f(st.Median)
}

func fmtCores(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// fmtPairs formats pairs/s as median (min–max).
func fmtPairs(st suite.Stat) string {
	if st.N <= 1 {
		return suite.FmtRate(st.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", suite.FmtRate(st.Median), suite.FmtRate(st.Min), suite.FmtRate(st.Max))
}

// threadsOf is a target's "loops / threads" cell.
func (r *scalingResult) threadsOf(name string) string {
	for _, run := range r.Runs {
		if run.Target != name {
			continue
		}
		switch {
		case run.Loops == 1:
			return "1 loop"
		case run.Loops > 1:
			return fmt.Sprintf("%d loops", run.Loops)
		case run.IOThreads > 0:
			return fmt.Sprintf("%d io-threads", run.IOThreads)
		}
		return "1 thread"
	}
	return "–"
}

// verdicts states the two targets and whether this run met them;
// a run without what a target needs says so, and what it measured instead.
func (r *scalingResult) verdicts(rows map[suite.CellKey]scalingRow) []string {
	goal, one := ngLoopsName(goalLoops), ngLoopsName(1)
	var out []string
	first := fmt.Sprintf("Target %d loops ≥ %.0f× one loop:", goalLoops, goalVsOneLoop)
	if slices.Contains(r.Loops, goalLoops) && slices.Contains(r.Loops, 1) {
		var per []string
		for _, sh := range r.Shapes {
			if v, ok := r.ratio(rows, goal, one, sh); ok {
				per = append(per, fmt.Sprintf("%s %.2f× (%s)", sh.label(), v, metOrNot(v >= goalVsOneLoop)))
			}
		}
		out = append(out, fmt.Sprintf("%s %s.", first, strings.Join(per, "; ")))
	} else {
		top := slices.Max(r.Loops)
		var per []string
		for _, sh := range r.Shapes {
			if v, ok := r.ratio(rows, ngLoopsName(top), one, sh); ok && top > 1 {
				per = append(per, fmt.Sprintf("%s %.2f×", sh.label(), v))
			}
		}
		msg := fmt.Sprintf("%s not measured (it needs loop counts 1 and %d; this run's: %s)", first, goalLoops, joinInts(r.Loops))
		if len(per) > 0 {
			msg += fmt.Sprintf("; %d loops vs one: %s", top, strings.Join(per, "; "))
		}
		out = append(out, msg+".")
	}
	second := fmt.Sprintf("Target %d loops ≥ %.0f× single-threaded Redis at %s connections × depth %d:", goalLoops, goalVsRedis, "1,000", goalRedisDepth)
	if v, ok := r.ratio(rows, goal, scalingRedis, shape{goalRedisConns, goalRedisDepth}); ok {
		out = append(out, fmt.Sprintf("%s %.2f× (%s).", second, v, metOrNot(v >= goalVsRedis)))
	} else {
		top := slices.Max(r.Loops)
		var per []string
		for _, sh := range r.Shapes {
			if v, ok := r.ratio(rows, ngLoopsName(top), scalingRedis, sh); ok {
				per = append(per, fmt.Sprintf("%s %.2f×", sh.label(), v))
			}
		}
		msg := fmt.Sprintf("%s not measured (it needs %s, %s and the %s shape)", second, goal, scalingRedis, shape{goalRedisConns, goalRedisDepth})
		if len(per) > 0 {
			msg += fmt.Sprintf("; %s vs %s: %s", ngLoopsName(top), scalingRedis, strings.Join(per, "; "))
		}
		out = append(out, msg+".")
	}
	return out
}

// namedChart is a chart and its file name (without the mode prefix).
type namedChart struct {
	name  string
	chart *suite.Chart
}

// charts draws pairs/s by loop count, one line per shape, and the Redis
// rows as flat lines across it for reference.
func (r *scalingResult) charts() []namedChart {
	if len(r.Runs) == 0 {
		return nil
	}
	rows := r.rows()
	ch := &suite.Chart{Title: "lock+release throughput by dflockd-ng --loops",
		XLabel: "dflockd-ng --loops (log scale)", YLabel: "pairs/s (median)", YFormat: suite.SI}
	lo, hi := slices.Min(r.Loops), slices.Max(r.Loops)
	for _, sh := range r.Shapes {
		ser := suite.Series{Name: "ng " + sh.label()}
		for _, n := range r.Loops {
			if row, ok := rows[suite.CellKey{Target: ngLoopsName(n), Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth}]; ok {
				ser.Points = append(ser.Points, suite.Point{X: float64(n), Y: row.cell.Pairs.Median})
			}
		}
		ch.Series = append(ch.Series, ser)
	}
	for _, name := range r.Targets {
		if strings.HasPrefix(name, "ng-") {
			continue
		}
		for _, sh := range r.Shapes {
			if row, ok := rows[suite.CellKey{Target: name, Workload: string(loadgen.Lock), Conns: sh.Conns, Depth: sh.Depth}]; ok {
				y := row.cell.Pairs.Median
				ch.Series = append(ch.Series, suite.Series{Name: name + " " + sh.label(),
					Points: []suite.Point{{X: float64(lo), Y: y}, {X: float64(hi), Y: y}}})
			}
		}
	}
	return []namedChart{{"scaling-throughput.svg", ch}}
}

func metOrNot(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}
