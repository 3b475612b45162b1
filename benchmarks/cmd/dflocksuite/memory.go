package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// memory runs each memory scenario on a freshly started server, so that
// no earlier load has grown its heap.
func (s *runner) memory(ctx context.Context) ([]suite.MemResult, error) {
	type scen struct {
		name string
		run  func(context.Context, suite.MemTarget) (*suite.MemResult, error)
	}
	locks := scen{suite.ScenLocks, func(ctx context.Context, t suite.MemTarget) (*suite.MemResult, error) {
		return suite.HeldLocks(ctx, t, s.memLocks, s.memLockC)
	}}
	idle := scen{suite.ScenIdle, func(ctx context.Context, t suite.MemTarget) (*suite.MemResult, error) {
		return suite.IdleConns(ctx, t, s.memIdle)
	}}
	waiters := scen{suite.ScenWaiters, func(ctx context.Context, t suite.MemTarget) (*suite.MemResult, error) {
		return suite.Waiters(ctx, t, s.memWaiters)
	}}
	type server struct {
		name  string
		redis bool
		start func() (*proc, error)
		scens []scen
	}
	servers := []server{
		{"ng", false, func() (*proc, error) { return s.startNG(ctx, s.ngBin) }, []scen{locks, idle, waiters}},
	}
	for _, b := range s.memBins {
		servers = append(servers, server{b.name, false, func() (*proc, error) { return s.startNG(ctx, b.path) }, []scen{locks, idle, waiters}})
	}
	if !s.memOnly {
		servers = append(servers,
			server{"baseline", false, func() (*proc, error) { return s.startRef(ctx, "baseline") }, []scen{locks, idle, waiters}},
			server{"ceiling", false, func() (*proc, error) { return s.startRef(ctx, "ceiling") }, []scen{idle}})
	}
	if !s.noRedis {
		servers = append(servers, server{"redis", true, func() (*proc, error) { return s.startRedis(ctx) }, []scen{locks, idle}})
	}
	var out []suite.MemResult
	total := 0
	for _, sv := range servers {
		total += len(sv.scens)
	}
	n := 0
	for _, sv := range servers {
		for _, sc := range sv.scens {
			n++
			fmt.Fprintf(s.stderr, "[mem %d/%d] %s %s … ", n, total, sv.name, sc.name)
			p, err := sv.start()
			if err != nil {
				return nil, err
			}
			if s.serverCPUs != "" && sv.redis {
				_ = pinThreads(p.pid, s.serverCPUs)
			}
			sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			r, err := sc.run(sctx, suite.MemTarget{Name: sv.name, Addr: p.addr, PID: p.pid, Redis: sv.redis})
			cancel()
			p.stop()
			if err != nil {
				fmt.Fprintln(s.stderr, "FAIL")
				return nil, fmt.Errorf("memory scenario %q on %s: %w", sc.name, sv.name, err)
			}
			fmt.Fprintf(s.stderr, "%.0f bytes per item (RSS %.1f → %.1f MiB; idle: anon %.1f MiB, file %.1f MiB)\n", r.PerItem,
				float64(r.Before)/(1<<20), float64(r.After)/(1<<20), float64(r.AnonBefore)/(1<<20), float64(r.FileBefore)/(1<<20))
			out = append(out, *r)
		}
	}
	return out, nil
}

// memoryOnly is a --memory-only run: ng's memory scenarios (and those of
// the --mem-bin builds and Redis) with no throughput runs before them.
func (s *runner) memoryOnly(ctx context.Context, args []string, env []suite.KV, start time.Time) error {
	bin, err := s.dflockdBinary(ctx)
	if err != nil {
		return err
	}
	s.ngBin = bin
	mem, err := s.memory(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "dflocksuite: done in %v\n", time.Since(start).Round(time.Second))
	return s.write(args, env, nil, mem, nil, nil, nil, nil, nil)
}

// namedBin is a --mem-bin value.
type namedBin struct{ name, path string }

type namedBins []namedBin

func (n *namedBins) String() string {
	var p []string
	for _, b := range *n {
		p = append(p, b.name+"="+b.path)
	}
	return strings.Join(p, ",")
}

func (n *namedBins) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want name=path, got %q", v)
	}
	if name == "ng" || name == "redis" || slices.ContainsFunc(*n, func(b namedBin) bool { return b.name == name }) {
		return fmt.Errorf("name %q is taken", name)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return err
	}
	*n = append(*n, namedBin{name, abs})
	return nil
}
