package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
	"github.com/dflockd-ng/dflockd/benchmarks/procstat"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// job is one run of the matrix.
type job struct {
	t        *target
	workload loadgen.Workload
	conns    int
	depth    int
	rep      int
}

// jobs lists the matrix. Targets are interleaved inside every
// configuration and repetitions are the outer loop, so a slow drift of the
// machine touches every target alike.
func (s *runner) jobs() []job {
	var out []job
	for rep := 1; rep <= s.reps; rep++ {
		for _, c := range s.lockConns {
			if !s.lock {
				break
			}
			for _, d := range s.depths {
				for _, t := range s.targets {
					if t.kind == "etcd" && d > 1 {
						continue // Lock blocks: no pipelining to compare here (the cluster comparison runs depth as lockers per client)
					}
					out = append(out, job{t, loadgen.Lock, c, d, rep})
				}
			}
		}
		for _, c := range s.hotConns {
			for _, t := range s.targets {
				if s.hot && t.hot {
					out = append(out, job{t, loadgen.Hot, c, 1, rep})
				}
			}
		}
		for _, w := range s.prims {
			for _, c := range s.primConns {
				for _, d := range s.primDepths {
					for _, t := range s.targets {
						if t.prim {
							out = append(out, job{t, w, c, d, rep})
						}
					}
				}
			}
		}
	}
	return out
}

func (s *runner) runMatrix(ctx context.Context) ([]suite.Record, error) {
	return s.runJobs(ctx, s.jobs(), nil)
}

// runJobs runs jobs in order with a progress line each. When a job fails
// and retry (if set) says so, the job runs once more.
func (s *runner) runJobs(ctx context.Context, jobs []job, retry func(job, error) bool) ([]suite.Record, error) {
	var recs []suite.Record
	start := time.Now()
	for i, j := range jobs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("interrupted: %w", err)
		}
		if i > 0 {
			time.Sleep(s.settle)
		}
		eta := ""
		if i > 0 {
			per := time.Since(start) / time.Duration(i)
			eta = fmt.Sprintf(", eta %v", (per * time.Duration(len(jobs)-i)).Round(time.Second))
		}
		fmt.Fprintf(s.stderr, "[%d/%d] %s %s c=%d d=%d rep %d/%d (elapsed %v%s) … ", i+1, len(jobs), j.t.name, j.workload,
			j.conns, j.depth, j.rep, s.reps, time.Since(start).Round(time.Second), eta)
		rec, err := s.runJob(ctx, j)
		if err != nil && retry != nil && retry(j, err) {
			fmt.Fprintf(s.stderr, "failed (%v); once more … ", err)
			rec, err = s.runJob(ctx, j)
		}
		if err != nil {
			fmt.Fprintln(s.stderr, "FAIL")
			return nil, fmt.Errorf("target %s, %s c=%d d=%d rep %d: %w", j.t.name, j.workload, j.conns, j.depth, j.rep, err)
		}
		if j.workload.Primitive() {
			fmt.Fprintf(s.stderr, "%s ops/s, p99 %s\n", suite.FmtRate(rec.ReqPerS), suite.FmtNs(float64(rec.P99Ns)))
		} else {
			fmt.Fprintf(s.stderr, "%s pairs/s, p99 %s\n", suite.FmtRate(rec.PairsPerS), suite.FmtNs(float64(rec.P99Ns)))
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

func (s *runner) runJob(ctx context.Context, j job) (suite.Record, error) {
	if j.t.kind == "etcd" {
		return s.runEtcd(ctx, j)
	}
	return s.runLoad(ctx, j)
}

// windowProbe samples servers' CPU time at the edges of the window: one
// process, or every member of a cluster, whose usage is then the sum.
type windowProbe struct {
	pids     []int
	mu       sync.Mutex
	a, b     []procstat.Sample
	n        int
	firstErr error
}

func (p *windowProbe) take(dst *[]procstat.Sample) {
	smps := make([]procstat.Sample, len(p.pids))
	var err error
	for i, pid := range p.pids {
		var e error
		if smps[i], e = procstat.Take(pid); e != nil && err == nil {
			err = e
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	*dst = smps
	p.n++
	if err != nil && p.firstErr == nil {
		p.firstErr = err
	}
}

func (p *windowProbe) usage() (procstat.Usage, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr != nil {
		return procstat.Usage{}, false, p.firstErr
	}
	if p.n != 2 {
		return procstat.Usage{}, false, nil
	}
	var sum procstat.Usage
	for i := range p.pids {
		u := p.b[i].Since(p.a[i])
		sum.Wall = max(sum.Wall, u.Wall)
		sum.CPU += u.CPU
		sum.Cores += u.Cores
		sum.RSS += u.RSS
		sum.PeakRSS += u.PeakRSS
	}
	return sum, true, nil
}

func (s *runner) runLoad(ctx context.Context, j job) (suite.Record, error) {
	prefix := "suite"
	if j.t.keyPrefix != "" {
		prefix = j.t.keyPrefix
	}
	if j.t.freshKeys {
		prefix = fmt.Sprintf("suite.%s.c%dd%dr%d", j.workload, j.conns, j.depth, j.rep)
	}
	cfg := loadgen.Config{
		Name: j.t.name, Addr: j.t.addr, Proto: loadgen.ProtoLine,
		Workload: j.workload, Conns: j.conns, Depth: j.depth,
		Warmup: s.warmup, Duration: s.duration,
		KeyPrefix: prefix, RedisRelease: j.t.release, Tokens: j.t.tokens,
	}
	if j.t.kind == "redis" {
		cfg.Proto = loadgen.ProtoRedis
	}
	var probe *windowProbe
	if pids := j.t.pids(); len(pids) > 0 {
		probe = &windowProbe{pids: pids}
		cfg.OnWindowStart = func() { probe.take(&probe.a) }
		cfg.OnWindowEnd = func() { probe.take(&probe.b) }
	}
	ctx, cancel := context.WithTimeout(ctx, s.warmup+s.duration+time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, cfg)
	if err != nil {
		return suite.Record{}, err
	}
	rec := suite.Record{
		Target: j.t.name, Workload: string(j.workload), Conns: j.conns, Depth: j.depth, Rep: j.rep,
		PairsPerS: res.PairRate, ReqPerS: res.RequestRate,
		P50Ns: int64(res.Latency.P50), P99Ns: int64(res.Latency.P99), P999Ns: int64(res.Latency.P999), MaxNs: int64(res.Latency.Max),
	}
	if res.Pairs == 0 {
		return rec, fmt.Errorf("no %s cycle completed in the window", j.workload)
	}
	if probe != nil {
		u, ok, err := probe.usage()
		if err != nil {
			return rec, fmt.Errorf("server measurement: %w", err)
		}
		if ok {
			rec.CPUPerPairNs = float64(u.PerOp(res.Pairs))
			rec.CPUPerReqNs = float64(u.PerOp(res.Requests))
			rec.Cores = u.Cores
			rec.RSSBytes = u.RSS
		}
	}
	return rec, nil
}

// namedAddr is one "name=host:port[@pid]" flag value. With the server's
// process id the suite reads its CPU time as for its own servers, which
// the summary's comparisons of server CPU need (v1.10.0's per hand-off).
type namedAddr struct {
	name, addr string
	pid        int
}

type namedAddrs []namedAddr

func (n *namedAddrs) String() string {
	var p []string
	for _, a := range *n {
		v := a.name + "=" + a.addr
		if a.pid > 0 {
			v += "@" + strconv.Itoa(a.pid)
		}
		p = append(p, v)
	}
	return strings.Join(p, ",")
}

var reserved = map[string]bool{"ng": true, "ceiling": true, "baseline": true, "redis": true, "redis-del": true, "etcd": true}

func (n *namedAddrs) Set(v string) error {
	name, addr, ok := strings.Cut(v, "=")
	if !ok || name == "" || reserved[name] {
		return fmt.Errorf("%q: want name=host:port[@pid] with a name other than %v", v, "ng, ceiling, baseline, redis, redis-del, etcd")
	}
	pid := 0
	if a, p, ok := strings.Cut(addr, "@"); ok {
		var err error
		if pid, err = strconv.Atoi(p); err != nil || pid <= 0 {
			return fmt.Errorf("%q: @%s is not a process id", v, p)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/stat", pid)); err != nil {
			return fmt.Errorf("%q: process %d: %w", v, pid, err)
		}
		addr = a
	}
	for _, a := range *n {
		if a.name == name {
			return fmt.Errorf("%q: duplicate name", v)
		}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q: %w", v, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: not a loopback address", v)
	}
	*n = append(*n, namedAddr{name, addr, pid})
	return nil
}

func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 || v > 20000 {
			return nil, fmt.Errorf("--%s: %q is not an integer in [1, 20000]", flagName, f)
		}
		out = append(out, v)
	}
	return out, nil
}
