// Command dflockbench runs the comparative lock-server benchmark: a
// closed-loop load (package loadgen) against one or more targets over
// loopback, one result line per target and configuration.
//
// Targets are dflockd-protocol servers (--target, repeatable), Redis servers
// (--redis, repeatable), and the two reference servers it can start itself on
// free loopback ports: the gnet "ceiling" (--with-ceiling) and the dflockd-like
// "baseline" (--with-baseline), as child processes (default, so their CPU time
// and memory can be measured from /proc) or in-process (--inproc). It can also
// start a throw-away redis-server (--with-redis), and over TLS (tls.go) a
// dflockd-ng binary (--with-ng-tls) and a TLS-only redis-server
// (--with-redis-tls) sharing one throw-away certificate.
//
// Examples:
//
//	dflockbench --with-ceiling --with-baseline --conns 50 --depth 1,16 --duration 5s
//	dflockbench --target ng=127.0.0.1:6388 --pid ng=$(pidof dflockd) --workload hot
//	dflockbench --with-redis --workload lock,try --redis-release cas
//	dflockbench --with-ng-tls ./dflockd --with-redis-tls --conns 50 --depth 1,16
//
// --workload, --conns and --depth take comma-separated lists; every
// combination is run in turn against every target (combinations a target
// cannot run, such as hot with depth > 1 or sem on Redis, are skipped with a
// note). Every run is bounded by --warmup + --duration. Any unexpected reply
// fails that run loudly; the exit status is 1 if any run failed.
//
// Linux only (server measurements read /proc).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(serveMain(os.Args[2:]))
	}
	os.Exit(benchMain(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed command line.
type options struct {
	targets       namedAddrs
	redis         namedAddrs
	pids          namedPIDs
	withCeiling   bool
	withBaseline  bool
	withRedis     bool
	inproc        bool
	ceilingLoops  int
	baselineLocks int
	redisServer   string

	workloads []loadgen.Workload
	conns     []int
	depths    []int
	warmup    time.Duration
	duration  time.Duration
	settle    time.Duration

	lease        int
	semLimit     int
	tryKeys      int
	keyPrefix    string
	redisRelease string
	jsonOut      bool
	cpuProfile   string

	// TLS (tls.go): targets over TLS and what their clients trust, and
	// the TLS servers dflockbench can start itself.
	tlsTargets   namedAddrs
	tlsRedis     namedAddrs
	tlsCA        string
	tlsInsecure  bool
	withNgTLS    string // dflockd-ng binary to start with TLS
	withRedisTLS bool
	serverCPUs   string // taskset CPU list of the TLS servers started
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("dflockbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&o.targets, "target", "dflockd-protocol target `[name=]host:port` (repeatable)")
	fs.Var(&o.redis, "redis", "Redis target `[name=]host:port` (repeatable)")
	fs.Var(&o.pids, "pid", "measure CPU and memory of target `name=PID` (repeatable)")
	fs.BoolVar(&o.withCeiling, "with-ceiling", false, "start the gnet ceiling server and add it as target \"ceiling\"")
	fs.BoolVar(&o.withBaseline, "with-baseline", false, "start the dflockd-like baseline server and add it as target \"baseline\"")
	fs.BoolVar(&o.withRedis, "with-redis", false, "start a throw-away redis-server and add it as target \"redis\"")
	fs.BoolVar(&o.inproc, "inproc", false, "run ceiling and baseline inside this process (no CPU or memory figures)")
	fs.IntVar(&o.ceilingLoops, "ceiling-loops", 0, "event loops of the ceiling server (0 = one per CPU)")
	fs.IntVar(&o.baselineLocks, "baseline-max-locks", 1<<20, "--max-locks of the baseline server (dflockd's default, 1024, is too few for many conns × depth)")
	fs.StringVar(&o.redisServer, "redis-server", "redis-server", "redis-server binary for --with-redis")
	workloads := fs.String("workload", "lock", "workloads, comma-separated: lock, hot, sem, try, mixed")
	conns := fs.String("conns", "50", "connections per run, comma-separated list")
	depths := fs.String("depth", "1", "requests in flight per connection, comma-separated list")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up before each measured window")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured window of each run")
	fs.DurationVar(&o.settle, "settle", 300*time.Millisecond, "pause between runs so servers finish cleaning up the last run's connections")
	fs.IntVar(&o.lease, "lease", 30, "lease in seconds sent with every acquire")
	fs.IntVar(&o.semLimit, "sem-limit", 8, "permits of the sem workload's semaphore")
	fs.IntVar(&o.tryKeys, "try-keys", 4, "shared keys of the try workload")
	fs.StringVar(&o.keyPrefix, "key-prefix", "bench", "prefix of every key (runs reuse keys so servers' key caps do not fill up)")
	fs.StringVar(&o.redisRelease, "redis-release", "cas", "Redis release: cas (compare-and-delete via EVAL) or del")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object per run instead of text")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the load generator to `file`")
	fs.Var(&o.tlsTargets, "tls-target", "dflockd-protocol target over TLS `[name=]host:port` (repeatable)")
	fs.Var(&o.tlsRedis, "tls-redis", "Redis target over TLS `[name=]host:port` (repeatable)")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "trust the CA certificates in `FILE` (PEM) for --tls-target and --tls-redis (default: the system's)")
	fs.BoolVar(&o.tlsInsecure, "tls-insecure", false, "do not verify the certificates of --tls-target and --tls-redis")
	fs.StringVar(&o.withNgTLS, "with-ng-tls", "", "start the dflockd-ng `binary` with TLS (a throw-away certificate) and add it as target \"ng-tls\"")
	fs.BoolVar(&o.withRedisTLS, "with-redis-tls", false, "start a throw-away redis-server speaking TLS only and add it as target \"redis-tls\"")
	fs.StringVar(&o.serverCPUs, "server-cpus", "", "run the servers of --with-ng-tls and --with-redis-tls under taskset -c `LIST`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errReported // the flag package printed it with the usage
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.workloads, err = parseWorkloads(*workloads); err != nil {
		return nil, err
	}
	if o.conns, err = parseInts("conns", *conns); err != nil {
		return nil, err
	}
	if o.depths, err = parseInts("depth", *depths); err != nil {
		return nil, err
	}
	if len(o.targets)+len(o.redis)+len(o.tlsTargets)+len(o.tlsRedis) == 0 && !o.withCeiling && !o.withBaseline &&
		!o.withRedis && o.withNgTLS == "" && !o.withRedisTLS {
		return nil, errors.New("no target: give --target, --redis, --tls-target, --tls-redis, --with-ceiling, " +
			"--with-baseline, --with-redis, --with-ng-tls or --with-redis-tls")
	}
	for name := range o.pids {
		if !o.targets.has(name) && !o.redis.has(name) && !o.tlsTargets.has(name) && !o.tlsRedis.has(name) {
			return nil, fmt.Errorf("--pid %s names no --target, --redis, --tls-target or --tls-redis", name)
		}
	}
	return o, nil
}

// errReported is a command-line error already shown to the user.
var errReported = errors.New("reported")

func benchMain(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "dflockbench:", err)
		return 2
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "dflockbench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "dflockbench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	targets, cleanup, err := assembleTargets(ctx, o, stderr)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "dflockbench:", err)
		return 1
	}
	out := newReporter(stdout, o.jsonOut)
	out.header(o, targets)

	failed := false
	first := true
	for _, w := range o.workloads {
		for _, c := range o.conns {
			for _, d := range o.depths {
				for _, t := range targets {
					if ctx.Err() != nil {
						fmt.Fprintln(stderr, "dflockbench: interrupted")
						return 1
					}
					cfg := o.config(t, w, c, d)
					if why := skipReason(cfg); why != "" {
						out.skip(t.name, t.proto, w, c, d, why)
						continue
					}
					if !first && o.settle > 0 {
						time.Sleep(o.settle)
					}
					first = false
					if err := runOne(ctx, cfg, t, out); err != nil {
						failed = true
						fmt.Fprintf(stderr, "FAIL %s %s c=%d d=%d: %v\n", t.name, w, c, d, err)
					}
				}
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

func (o *options) config(t *target, w loadgen.Workload, conns, depth int) loadgen.Config {
	return loadgen.Config{
		Name: t.name, Addr: t.addr, Proto: t.proto,
		Workload: w, Conns: conns, Depth: depth,
		Warmup: o.warmup, Duration: o.duration,
		Lease: o.lease, SemLimit: o.semLimit, TryKeys: o.tryKeys,
		KeyPrefix: o.keyPrefix, RedisRelease: loadgen.RedisRelease(o.redisRelease),
		TLS: t.tls,
	}
}

// skipReason says why a combination cannot run on a target, before trying.
func skipReason(cfg loadgen.Config) string {
	blocking := cfg.Workload == loadgen.Hot || cfg.Workload == loadgen.Sem
	switch {
	case blocking && cfg.Proto == loadgen.ProtoRedis:
		return "no Redis equivalent"
	case blocking && cfg.Depth > 1:
		return "blocking workload needs depth 1"
	}
	return ""
}

// runOne runs one configuration and reports it, sampling the server
// process (if known) at the edges of the measured window.
func runOne(ctx context.Context, cfg loadgen.Config, t *target, out *reporter) error {
	var probe *serverProbe
	if t.pid > 0 {
		probe = &serverProbe{pid: t.pid}
		cfg.OnWindowStart = probe.start
		cfg.OnWindowEnd = probe.end
	}
	// A safety net above the run's own bound: dialing many connections to
	// a stuck server must not hang the whole benchmark either.
	ctx, cancel := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration+time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return err
	}
	usage, err := probe.usage()
	if err != nil {
		return fmt.Errorf("server measurement: %w", err)
	}
	out.result(res, usage)
	return nil
}

// env describes the machine for the report header. The load average
// matters on shared machines: anything else running skews every figure.
func env() string {
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	return fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS %d, loadavg %s", runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.NumCPU(), runtime.GOMAXPROCS(0), load)
}
