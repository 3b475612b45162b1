package main

import (
	"context"
	"fmt"
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
		{"baseline", false, func() (*proc, error) { return s.startRef(ctx, "baseline") }, []scen{locks, idle, waiters}},
		{"ceiling", false, func() (*proc, error) { return s.startRef(ctx, "ceiling") }, []scen{idle}},
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
			fmt.Fprintf(s.stderr, "%.0f bytes per item (RSS %.1f → %.1f MiB)\n", r.PerItem, float64(r.Before)/(1<<20), float64(r.After)/(1<<20))
			out = append(out, *r)
		}
	}
	return out, nil
}
