// Command dflocksuite runs the whole comparative benchmark of dflockd-ng in
// one go and writes the generated section of PERF.md.
//
//	go run ./benchmarks/cmd/dflocksuite --quick   # ~2 minutes
//	go run ./benchmarks/cmd/dflocksuite           # full matrix, ~25 minutes
//	go run ./benchmarks/cmd/dflocksuite --workloads incr,kv,list,fanout
//	go run ./benchmarks/cmd/dflocksuite --workloads cluster --quick   # ~1 minute
//	go run ./benchmarks/cmd/dflocksuite --workloads scaling           # 16 cores, ~3 minutes
//	go run ./benchmarks/cmd/dflocksuite --workloads policy,noisy --reps 7   # ~4 minutes
//
// --workloads picks what runs: the lock workloads (lock, hot) and the
// memory scenarios fill PERF.md's core generated section; the redis-feats
// primitives (incr, kv, list; ng and Redis only), the pub/sub fan-out
// (package fanout) and the cluster comparison (a 3-member cluster against
// the single node and a 3-member etcd, and its failover time) one each;
// the scaling workload (dflockd-ng at 1, 2, 4, 8 loops against Redis, on
// a many-core host, scaling.go) runs alone and fills one more; the policy
// and noisy workloads (a policy file's cost, policy.go; a tenant at its
// quotas beside another, noisy.go) one each. A run rewrites only what it
// measured.
//
// It builds ./cmd/dflockd into a temporary directory (or takes
// --dflockd-bin) and starts it, the gnet ceiling, the dflockd-like
// baseline, a throw-away redis-server (or --redis-bin) and, when it
// installs and runs, etcd — each on a free loopback port, pinned to the
// server CPU(s) — and drives them from this process, pinned to the client
// CPU(s): it re-executes itself with that CPU mask, and starts every
// server through its own hidden pin subcommand, with sched_setaffinity,
// so no taskset is needed (pin_linux.go). --target adds any other
// dflockd-protocol server by address.
//
// Any error or wrong reply from a target stops the suite with a message
// naming the target and the reply, and exit status 1; PERF.md is then left
// alone. Optional peers that cannot run here (etcd) are reported as
// unavailable instead.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/fanout"
	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

const pinnedEnv = "DFLOCKSUITE_PINNED"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serveMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == noisyCommand {
		os.Exit(noisyMain(os.Args[2:], os.Stdin, os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == sinkCommand {
		os.Exit(sinkMain(os.Stdin, os.Stdout))
	}
	if len(os.Args) > 1 && os.Args[1] == pinCommand {
		os.Exit(pinMain(os.Args[2:]))
	}
	os.Exit(suiteMain(os.Args[1:], os.Stderr))
}

type runner struct {
	stderr  io.Writer
	logw    *os.File
	logPath string
	tmp     string
	repo    string
	install bool

	serverCPUs, clientCPUs string
	pinNote                string

	quick      bool
	reps       int
	warmup     time.Duration
	duration   time.Duration
	settle     time.Duration
	lockConns  []int
	hotConns   []int
	depths     []int
	primConns  []int
	primDepths []int
	fanSubs    int
	fanSignals int

	clusterConns   int
	clusterDepths  []int
	clusterDir     string // the clusters' data; default a temporary directory on a disk
	failoverTrials int

	// What runs (--workloads): the core workloads (lock, hot) and memory
	// go to PERF.md's core section, the primitives (incr, kv, list) and
	// the fan-out to one each, so a run of some leaves the others alone.
	lock, hot bool
	prims     []loadgen.Workload
	fanout    bool
	cluster   bool
	scaling   bool
	policy    bool // the cost of a policy file (policy.go)
	noisy     bool // a tenant at its quotas beside a quiet one (noisy.go)

	// The policy workload: connections (one identity each), depth, rules
	// per identity, identities of the many-identities server (0: none).
	policyConns, policyDepth, policyRules, policyMany int
	// The noisy workload: the quiet tenant's connections and depth, the
	// noisy one's rate quota and dials a second beyond its conns quota.
	noisyConns, noisyDepth, noisyRate, noisyDials int
	noisyCPUs                                     string // where the noisy tenant's process runs (default the client CPUs)
	noisyControl                                  bool   // a third phase: the noisy tenant's dials to a sink (noisy.go)

	// The scaling workload (scaling.go): its own CPU sets, loop counts and
	// connection × depth shapes, and the threaded Redis's io-threads.
	scalingServerCPUs string
	scalingClientCPUs string
	scalingLoops      []int
	scalingShapes     []shape
	scalingRedisIO    int
	fileLimit         uint64 // RLIMIT_NOFILE in force

	// Prebuilt binaries instead of go build and the system's redis-server,
	// for a host without a Go toolchain or a network.
	dflockdBin string
	redisBin   string

	ngLoops    int
	ngMaxLocks int
	extra      namedAddrs
	noRedis    bool
	noEtcd     bool
	noMemory   bool
	memOnly    bool      // --memory-only: the memory scenarios of ng (and Redis), nothing else
	memBins    namedBins // --mem-bin: more dflockd-ng binaries beside ng in the memory scenarios
	noWrite    bool
	perfPath   string
	resultsDir string
	memLocks   int
	memLockC   int
	memIdle    int
	memWaiters int

	ngBin       string
	redisPath   string // the redis-server the suite runs, once found
	procs       []*proc
	cleanups    []func()
	targets     []*target
	notes       []string // core section
	primNote    []string // primitives section
	clusterNote []string // cluster section
}

// target is one server under test.
type target struct {
	name      string
	addr      string   // the address the load goes to
	endpoints []string // etcd: every member's client URL (default http://addr)
	kind      string   // "line", "redis", "etcd"
	release   loadgen.RedisRelease
	pid       int
	group     []int // a cluster's members: its server CPU is their sum (pid is then 0)
	freshKeys bool  // every run on keys of its own (a cluster releases a closed connection's locks through its log, maybe after the next run began)
	hot       bool  // can run the hot workload
	prim      bool  // runs the primitive workloads
	// tokens: every connection authenticates first, connection i with
	// tokens[i % len] (a server with a policy file, package policy).
	tokens    []string
	keyPrefix string // the lock keys' prefix, when not the suite's own
}

// pids lists the processes whose CPU time is the target's.
func (t *target) pids() []int {
	if len(t.group) > 0 {
		return t.group
	}
	if t.pid > 0 {
		return []int{t.pid}
	}
	return nil
}

func suiteMain(args []string, stderr io.Writer) int {
	s := &runner{stderr: stderr}
	fs := flag.NewFlagSet("dflocksuite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&s.quick, "quick", false, "short run: lock at 10,50 conns × depth 1,16, incr/kv/list at 50 × 16, fan-out of 200 signals; one repetition, short windows")
	workloads := fs.String("workloads", "", "comma list of lock, hot, incr, kv, list, fanout, cluster, policy, noisy, scaling (default all but scaling; --quick: all but hot, cluster, policy, noisy and scaling; scaling runs alone)")
	reps := fs.Int("reps", 0, "repetitions (default 3, --quick 1)")
	warm := fs.Duration("warmup", 0, "warm-up per run (default 1s, --quick 500ms)")
	dur := fs.Duration("duration", 0, "measured window per run (default 3s, --quick 2s)")
	fs.DurationVar(&s.settle, "settle", 300*time.Millisecond, "pause between runs")
	conns := fs.String("conns", "", "lock workload connections (default 1,10,50,200,500; --quick 10,50)")
	hot := fs.String("hot-conns", "10,50,200", "hot workload connections at depth 1; \"none\" skips")
	depths := fs.String("depth", "1,16", "pipeline depths of the lock workload")
	primConns := fs.String("prim-conns", "", "incr, kv and list connections (default 10,50,200; --quick 50)")
	primDepths := fs.String("prim-depth", "16", "pipeline depths of incr, kv and list")
	fs.IntVar(&s.fanSubs, "fanout-subs", 1000, "fan-out: subscribers of every signal")
	fs.IntVar(&s.fanSignals, "fanout-signals", 0, "fan-out: signals of the clean and of the after phase (default 500, --quick 200)")
	fs.IntVar(&s.clusterConns, "cluster-conns", 50, "cluster comparison: connections")
	clusterDepths := fs.String("cluster-depth", "1,16", "cluster comparison: pipeline depths (etcd: lockers per client)")
	fs.StringVar(&s.clusterDir, "cluster-dir", "", "cluster comparison: directory on a disk for the members' data (default the temporary directory, or /var/tmp, if not tmpfs)")
	fs.IntVar(&s.failoverTrials, "failover-trials", 0, "cluster comparison: kills of the leader (default 3, --quick 1)")
	fs.IntVar(&s.policyConns, "policy-conns", 50, "policy workload: connections, each its own identity")
	fs.IntVar(&s.policyDepth, "policy-depth", 16, "policy workload: pipeline depth")
	fs.IntVar(&s.policyRules, "policy-rules", 100, "policy workload: allow and deny rules of every identity")
	fs.IntVar(&s.policyMany, "policy-identities", 500, "policy workload: identities of the many-identities server (0: none)")
	fs.IntVar(&s.noisyConns, "noisy-conns", 10, "noisy workload: the quiet tenant's connections")
	fs.IntVar(&s.noisyDepth, "noisy-depth", 1, "noisy workload: the quiet tenant's pipeline depth")
	fs.IntVar(&s.noisyRate, "noisy-rate", 2000, "noisy workload: the noisy tenant's rate quota (requests a second)")
	fs.IntVar(&s.noisyDials, "noisy-dials", 100, "noisy workload: connections a second the noisy tenant opens beyond its conns quota")
	fs.StringVar(&s.noisyCPUs, "noisy-cpus", "", "noisy workload: CPU list of the noisy tenant's process (default --client-cpus)")
	fs.BoolVar(&s.noisyControl, "noisy-control", true, "noisy workload: a third phase, the noisy tenant with its dials sent to a bare sink on the server's CPUs instead of to the server (what they cost the host, not the server)")
	fs.IntVar(&s.ngLoops, "loops", 1, "--loops of dflockd-ng (and of the ceiling)")
	fs.IntVar(&s.ngMaxLocks, "max-locks", 2000000, "--max-locks of dflockd-ng and the baseline")
	fs.Var(&s.extra, "target", "extra dflockd-protocol target `name=host:port[@pid]` (loopback, repeatable; with its process id, its server CPU is measured too)")
	fs.BoolVar(&s.noRedis, "no-redis", false, "skip Redis")
	fs.BoolVar(&s.noEtcd, "no-etcd", false, "skip etcd")
	fs.BoolVar(&s.noMemory, "no-memory", false, "skip the memory scenarios")
	fs.BoolVar(&s.memOnly, "memory-only", false, "run only the memory scenarios, on ng, the --mem-bin binaries and Redis (not the reference servers)")
	fs.Var(&s.memBins, "mem-bin", "another dflockd-ng binary `name=path` for the memory scenarios, beside ng (repeatable; compares builds side by side)")
	fs.BoolVar(&s.noWrite, "no-write", false, "do not touch PERF.md, the charts or the raw results")
	fs.BoolVar(&s.install, "install", true, "apt-get install redis-server / etcd-server when missing")
	pin := fs.Bool("pin", true, "pin servers and load generator to different CPUs (sched_setaffinity)")
	fs.StringVar(&s.serverCPUs, "server-cpus", "0", "CPU list of the servers")
	fs.StringVar(&s.clientCPUs, "client-cpus", "1", "CPU list of the load generator")
	fs.StringVar(&s.perfPath, "perf", "", "PERF.md to update (default <repo>/PERF.md)")
	fs.StringVar(&s.resultsDir, "results", "", "charts and raw JSON (default <repo>/benchmarks/results)")
	summaryOnly := fs.Bool("summary-only", false, "run nothing: rewrite PERF.md's summary table from the raw JSON results in --results")
	fs.IntVar(&s.memLocks, "mem-locks", 100000, "memory scenario: held locks")
	fs.IntVar(&s.memLockC, "mem-lock-conns", 100, "memory scenario: connections holding them")
	fs.IntVar(&s.memIdle, "mem-idle", 10000, "memory scenario: idle connections")
	fs.IntVar(&s.memWaiters, "mem-waiters", 10000, "memory scenario: waiters on one key")
	fs.StringVar(&s.dflockdBin, "dflockd-bin", "", "prebuilt dflockd binary to run instead of building ./cmd/dflockd")
	fs.StringVar(&s.redisBin, "redis-bin", "", "redis-server (or a script exec'ing one) to run instead of the one in PATH")
	fs.StringVar(&s.scalingServerCPUs, "scaling-server-cpus", "0-7", "scaling: CPU list of the servers")
	fs.StringVar(&s.scalingClientCPUs, "scaling-client-cpus", "8-15", "scaling: CPU list of the load generator")
	scalingLoops := fs.String("scaling-loops", "1,2,4,8", "scaling: --loops of dflockd-ng, one server each")
	scalingShapes := fs.String("scaling-shapes", "1000x1,200x16", "scaling: connections x pipeline depth of the lock workload")
	fs.IntVar(&s.scalingRedisIO, "scaling-redis-io-threads", 4, "scaling: io-threads of the threaded Redis beside the single-threaded one (0: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dflocksuite: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *summaryOnly {
		return summaryMain(s, stderr)
	}
	def := func(quick, full string) string {
		if s.quick {
			return quick
		}
		return full
	}
	s.reps = *reps
	if s.reps == 0 {
		s.reps = 3
		if s.quick {
			s.reps = 1
		}
	}
	s.warmup, s.duration = *warm, *dur
	if s.warmup == 0 {
		s.warmup = map[bool]time.Duration{true: 500 * time.Millisecond, false: time.Second}[s.quick]
	}
	if s.duration == 0 {
		s.duration = map[bool]time.Duration{true: 2 * time.Second, false: 3 * time.Second}[s.quick]
	}
	var err error
	if *conns == "" {
		*conns = def("10,50", "1,10,50,200,500")
	}
	if *workloads == "" {
		*workloads = def("lock,incr,kv,list,fanout", "lock,hot,incr,kv,list,fanout,cluster,policy,noisy")
	}
	if err := s.parseWorkloads(*workloads); err != nil {
		return usageErr(stderr, err)
	}
	if err := s.checkPolicyFlags(); s.policy && err != nil {
		return usageErr(stderr, err)
	}
	if err := s.checkNoisyFlags(); s.noisy && err != nil {
		return usageErr(stderr, err)
	}
	if *primConns == "" {
		*primConns = def("50", "10,50,200")
	}
	if s.primConns, err = parseInts("prim-conns", *primConns); err != nil {
		return usageErr(stderr, err)
	}
	if s.primDepths, err = parseInts("prim-depth", *primDepths); err != nil {
		return usageErr(stderr, err)
	}
	if s.fanSignals == 0 {
		s.fanSignals = map[bool]int{true: 200, false: 500}[s.quick]
	}
	if s.clusterDepths, err = parseInts("cluster-depth", *clusterDepths); err != nil {
		return usageErr(stderr, err)
	}
	if s.failoverTrials == 0 {
		s.failoverTrials = map[bool]int{true: 1, false: 3}[s.quick]
	}
	if s.clusterConns < 1 || s.clusterConns > 20000 || s.failoverTrials < 1 || s.failoverTrials > 20 {
		return usageErr(stderr, errors.New("--cluster-conns must be 1..20000 and --failover-trials 1..20"))
	}
	if s.fanSubs < 2 || s.fanSubs > 20000 || s.fanSignals < 1 || s.fanSignals > 100000 {
		return usageErr(stderr, errors.New("--fanout-subs must be 2..20000 and --fanout-signals 1..100000"))
	}
	if s.lockConns, err = parseInts("conns", *conns); err != nil {
		return usageErr(stderr, err)
	}
	if *hot != "none" {
		if s.hotConns, err = parseInts("hot-conns", *hot); err != nil {
			return usageErr(stderr, err)
		}
	}
	if s.depths, err = parseInts("depth", *depths); err != nil {
		return usageErr(stderr, err)
	}
	if s.reps < 1 || s.reps > 20 || s.duration > time.Minute || s.warmup > time.Minute {
		return usageErr(stderr, errors.New("--reps must be 1..20, --warmup and --duration at most 1m"))
	}
	if s.scaling {
		var allowed []int // checked before the pinned re-exec, which narrows it
		if os.Getenv(pinnedEnv) == "" {
			if allowed, err = allowedCPUs(); err != nil {
				return usageErr(stderr, err)
			}
		}
		if err := s.parseScaling(*scalingLoops, *scalingShapes, allowed); err != nil {
			return usageErr(stderr, err)
		}
		s.serverCPUs, s.clientCPUs = s.scalingServerCPUs, s.scalingClientCPUs
	}
	// Before the re-exec below, so that it and every server inherit it.
	lim, err := raiseFileLimit(fileLimit)
	if err != nil {
		fmt.Fprintf(stderr, "dflocksuite: raising RLIMIT_NOFILE: %v\n", err)
	}
	s.fileLimit = lim

	// Pinning: re-execute with the client CPUs' mask so the load
	// generator's every thread stays on them; servers are started through
	// the pin subcommand on the server CPUs.
	if !*pin {
		s.serverCPUs, s.clientCPUs = "", ""
		s.pinNote = "off (--pin=false)"
	} else if os.Getenv(pinnedEnv) == "" {
		if runtime.NumCPU() < 2 {
			s.serverCPUs, s.clientCPUs = "", ""
			s.pinNote = fmt.Sprintf("off: only %d CPU", runtime.NumCPU())
		} else {
			exe, err := os.Executable()
			if err == nil {
				env := append(os.Environ(), pinnedEnv+"="+s.clientCPUs)
				err = execPinned(s.clientCPUs, exe, append([]string{exe}, args...), env)
			}
			fmt.Fprintf(stderr, "dflocksuite: pinned re-exec failed (%v); running unpinned\n", err)
			s.serverCPUs, s.clientCPUs = "", ""
			s.pinNote = "off: pinned re-exec failed"
		}
	}
	if s.serverCPUs != "" {
		s.pinNote = fmt.Sprintf("servers on CPU %s, load generator on CPU %s (sched_setaffinity)", s.serverCPUs, s.clientCPUs)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.run(ctx, args); err != nil {
		fmt.Fprintf(stderr, "dflocksuite: FAILED: %v\n", err)
		return 1
	}
	return 0
}

func usageErr(w io.Writer, err error) int {
	fmt.Fprintln(w, "dflocksuite:", err)
	return 2
}

func (s *runner) run(ctx context.Context, args []string) (err error) {
	if s.repo, err = findRepo(); err != nil {
		return err
	}
	if s.perfPath == "" {
		s.perfPath = filepath.Join(s.repo, "PERF.md")
	}
	if s.resultsDir == "" {
		s.resultsDir = filepath.Join(s.repo, "benchmarks", "results")
	}
	if s.tmp, err = os.MkdirTemp("", "dflocksuite-"); err != nil {
		return err
	}
	defer os.RemoveAll(s.tmp)
	s.logPath = filepath.Join(s.tmp, "servers.log")
	if s.logw, err = os.Create(s.logPath); err != nil {
		return err
	}
	defer func() {
		s.stopAll()
		for _, c := range s.cleanups {
			c()
		}
		if err != nil {
			// Keep the servers' output where the message can point to it.
			if b, rerr := os.ReadFile(s.logPath); rerr == nil && len(b) > 0 {
				keep := filepath.Join(os.TempDir(), "dflocksuite-servers.log")
				if os.WriteFile(keep, b, 0o644) == nil {
					err = fmt.Errorf("%w (server output: %s)", err, keep)
				}
			}
		}
		s.logw.Close()
	}()
	start := time.Now()
	envKV := s.environment(start)
	fmt.Fprintf(s.stderr, "dflocksuite: %s mode; %s; load average %s\n", map[bool]string{true: "quick", false: "full"}[s.quick], s.pinNote, loadavg())

	if s.memOnly {
		return s.memoryOnly(ctx, args, envKV, start)
	}
	if err := s.startTargets(ctx); err != nil {
		return err
	}
	recs, err := s.runMatrix(ctx)
	if err != nil {
		return err
	}
	// The throughput servers are done; fan-out and memory use fresh ones.
	s.stopAll()
	var fan []fanout.Result
	if s.fanout {
		if fan, err = s.fanoutPhase(ctx); err != nil {
			return err
		}
	}
	var cl *suite.ClusterResult
	if s.cluster {
		if cl, err = s.clusterPhase(ctx); err != nil {
			return err
		}
		s.stopAll()
	}
	var pol *policyResult
	if s.policy {
		if pol, err = s.policyPhase(ctx); err != nil {
			return err
		}
		s.stopAll()
	}
	var nz *noisyResult
	if s.noisy {
		if nz, err = s.noisyPhase(ctx); err != nil {
			return err
		}
		s.stopAll()
	}
	var scale *scalingResult
	if s.scaling {
		if scale, err = s.scalingPhase(ctx); err != nil {
			return err
		}
		s.stopAll()
	}
	var mem []suite.MemResult
	if s.core() && !s.noMemory {
		if mem, err = s.memory(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.stderr, "dflocksuite: done in %v\n", time.Since(start).Round(time.Second))
	return s.write(args, envKV, recs, mem, fan, cl, scale, pol, nz)
}

// core reports whether the run measures the core section's workloads.
func (s *runner) core() bool { return s.lock || s.hot }

// parseWorkloads reads --workloads.
func (s *runner) parseWorkloads(list string) error {
	for _, f := range strings.Split(list, ",") {
		switch w := loadgen.Workload(strings.TrimSpace(f)); {
		case w == loadgen.Lock:
			s.lock = true
		case w == loadgen.Hot:
			s.hot = true
		case w.Primitive():
			if !slices.Contains(s.prims, w) {
				s.prims = append(s.prims, w)
			}
		case w == "fanout":
			s.fanout = true
		case w == "cluster":
			s.cluster = true
		case w == "scaling":
			s.scaling = true
		case w == "policy":
			s.policy = true
		case w == "noisy":
			s.noisy = true
		default:
			return fmt.Errorf("--workloads: unknown %q (want lock, hot, incr, kv, list, fanout, cluster, policy, noisy, scaling)", w)
		}
	}
	// The scaling workload pins servers and generator to CPU sets of its
	// own, set once for the whole run.
	if s.scaling && (s.core() || len(s.prims) > 0 || s.fanout || s.cluster || s.policy || s.noisy) {
		return errors.New("--workloads: scaling runs alone (its servers and load generator sit on CPU sets of their own)")
	}
	return nil
}

// findRepo walks up from the working directory to the module root.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/dflockd-ng/dflockd\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the dflockd-ng module (no go.mod of github.com/dflockd-ng/dflockd above the working directory)")
		}
		dir = parent
	}
}

func loadavg() string {
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			return strings.Join(f[:3], " ")
		}
	}
	return "?"
}

// environment describes machine and build for the report.
func (s *runner) environment(now time.Time) []suite.KV {
	cpu := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	gnet := "?"
	if b, err := os.ReadFile(filepath.Join(s.repo, "go.mod")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "github.com/panjf2000/gnet/v2" {
				gnet = f[1]
			}
		}
	}
	mode := "full"
	if s.quick {
		mode = "quick"
	}
	return []suite.KV{
		{Key: "CPU", Value: cpu},
		{Key: "cores", Value: fmt.Sprint(cpuCount())},
		{Key: "GOMAXPROCS (load generator)", Value: fmt.Sprint(runtime.GOMAXPROCS(0))},
		{Key: "Go", Value: runtime.Version()},
		{Key: "gnet", Value: gnet},
		{Key: "kernel", Value: kernel},
		{Key: "date", Value: now.UTC().Format(suite.EnvDateLayout)},
		{Key: "commit", Value: commitOf(s.repo)},
		{Key: "pinning", Value: s.pinNote},
		{Key: "load average at start", Value: loadavg()},
		{Key: "mode", Value: fmt.Sprintf("%s: %d repetition(s), %v warm-up + %v window per run", mode, s.reps, s.warmup, s.duration)},
	}
}

// cpuCount is the machine's CPU count, not this (pinned) process's.
func cpuCount() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.NumCPU()
	}
	return strings.Count(string(b), "\nprocessor") + map[bool]int{true: 1}[strings.HasPrefix(string(b), "processor")]
}

// write updates the raw results, charts and PERF.md: the core section
// if this run measured locks or memory, the primitives section if it
// measured incr, kv or list, the fan-out section if it ran the fan-out,
// the cluster section if it ran the cluster comparison.
func (s *runner) write(args []string, env []suite.KV, recs []suite.Record, mem []suite.MemResult, fan []fanout.Result, cl *suite.ClusterResult, scale *scalingResult,
	pol *policyResult, nz *noisyResult) error {
	mode := "full"
	if s.quick {
		mode = "quick"
	}
	var core, prim []suite.Record
	for _, r := range recs {
		if loadgen.Workload(r.Workload).Primitive() {
			prim = append(prim, r)
		} else {
			core = append(core, r)
		}
	}
	type section struct {
		sec    suite.Section
		rep    *suite.Report
		blob   map[string]any
		charts []namedChart               // beyond the per-group ones; named without the mode
		render func(*suite.Report) []byte // the body, when not rep.Markdown
	}
	var secs []section
	command := strings.TrimSpace("go run ./benchmarks/cmd/dflocksuite " + strings.Join(args, " "))
	if len(core) > 0 || len(mem) > 0 {
		secs = append(secs, section{suite.CoreSection,
			&suite.Report{Title: "Comparative benchmark (generated)", Env: env, Command: command, Subject: "ng",
				Records: core, Memory: mem, Notes: s.notes, RawPath: "suite-" + mode + ".json"},
			map[string]any{"environment": env, "notes": s.notes, "runs": core, "memory": mem, "command": command}, nil, nil})
	}
	if len(prim) > 0 {
		secs = append(secs, section{suite.PrimitivesSection,
			&suite.Report{Title: "Redis-feats primitives (generated)", Env: env, Command: command, Subject: "ng",
				Records: prim, Notes: s.primNote, RawPath: "primitives-" + mode + ".json"},
			map[string]any{"environment": env, "notes": s.primNote, "runs": prim, "command": command}, nil, nil})
	}
	if len(fan) > 0 {
		secs = append(secs, section{suite.FanoutSection,
			&suite.Report{Title: "Pub/sub fan-out (generated)", Env: env, Command: command, Subject: "ng",
				Fanout: fan, RawPath: "fanout-" + mode + ".json"},
			map[string]any{"environment": env, "fanout": fan, "command": command}, nil, nil})
	}
	if cl != nil {
		secs = append(secs, section{suite.ClusterSection,
			&suite.Report{Title: "Cluster comparison (generated)", Env: env, Command: command, Subject: suite.ClusterLeader,
				Cluster: cl, Notes: s.clusterNote, RawPath: "cluster-" + mode + ".json"},
			map[string]any{"environment": env, "notes": s.clusterNote, "cluster": cl, "command": command}, nil, nil})
	}
	if scale != nil {
		secs = append(secs, section{scalingSection,
			&suite.Report{Title: "Scaling over cores (generated)", Env: env, Command: command, Subject: "ng",
				Notes: scale.Notes, RawPath: "scaling-" + mode + ".json"},
			map[string]any{"environment": env, "scaling": scale, "command": command}, scale.charts(), scale.markdown})
	}
	if pol != nil {
		secs = append(secs, section{policySection,
			&suite.Report{Title: "Policy cost (generated)", Env: env, Command: command, Subject: policyOwn,
				Notes: pol.Notes, RawPath: "policy-" + mode + ".json"},
			map[string]any{"environment": env, "policy": pol, "command": command}, nil, pol.markdown})
	}
	if nz != nil {
		secs = append(secs, section{noisySection,
			&suite.Report{Title: "Noisy neighbour (generated)", Env: env, Command: command, Subject: noisyBeside,
				Notes: nz.Notes, RawPath: "noisy-" + mode + ".json"},
			map[string]any{"environment": env, "noisy": nz, "command": command}, nil, nz.markdown})
	}
	var order []string
	for _, t := range s.targets {
		order = append(order, t.name)
	}
	perfDir := filepath.Dir(s.perfPath)
	files := map[string][]byte{}
	mds := make([][]byte, len(secs))
	for i, sc := range secs {
		rep := sc.rep
		rep.Targets = order
		for _, g := range suite.Groups(rep.Records) {
			thr, lat := suite.ChartsFor(rep.Records, g, order)
			for _, c := range []struct {
				ch   *suite.Chart
				kind string
			}{{thr, "throughput"}, {lat, "p99"}} {
				name := fmt.Sprintf("%s-%s-d%d-%s.svg", mode, g.Workload, g.Depth, c.kind)
				p := filepath.Join(s.resultsDir, name)
				files[p] = c.ch.SVG()
				rel, _ := filepath.Rel(perfDir, p)
				rep.Charts = append(rep.Charts, suite.ChartRef{Title: c.ch.Title, Path: filepath.ToSlash(rel)})
			}
		}
		for _, c := range sc.charts {
			p := filepath.Join(s.resultsDir, mode+"-"+c.name)
			files[p] = c.chart.SVG()
			rel, _ := filepath.Rel(perfDir, p)
			rep.Charts = append(rep.Charts, suite.ChartRef{Title: c.chart.Title, Path: filepath.ToSlash(rel)})
		}
		raw := filepath.Join(s.resultsDir, rep.RawPath)
		rel, _ := filepath.Rel(perfDir, raw)
		rep.RawPath = filepath.ToSlash(rel)
		blob, err := json.MarshalIndent(sc.blob, "", "  ")
		if err != nil {
			return err
		}
		files[raw] = append(blob, '\n')
		if sc.render != nil {
			mds[i] = sc.render(rep)
		} else {
			mds[i] = rep.Markdown()
		}
		fmt.Fprintf(s.stderr, "\n%s\n", mds[i])
	}
	if s.noWrite || len(secs) == 0 {
		return nil
	}
	if err := os.MkdirAll(s.resultsDir, 0o755); err != nil {
		return err
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	for i, sc := range secs {
		if err := sc.sec.Write(s.perfPath, mds[i]); err != nil {
			return err
		}
		fmt.Fprintf(s.stderr, "dflocksuite: wrote %s (section %s), %d charts and %s\n", s.perfPath, sc.sec.Begin, len(sc.rep.Charts), sc.rep.RawPath)
	}
	return s.writeSummary()
}
