package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/fanout"
	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// fanoutPhase runs the pub/sub fan-out repetitions against one freshly
// started dflockd-ng, pinned like the throughput targets (package fanout
// describes the phases).
func (s *runner) fanoutPhase(ctx context.Context) ([]fanout.Result, error) {
	p, err := s.startNG(ctx, s.ngBin)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	var out []fanout.Result
	for rep := 1; rep <= s.reps; rep++ {
		fmt.Fprintf(s.stderr, "[fanout %d/%d] ng %d subscribers, %d signals per phase … ", rep, s.reps, s.fanSubs, s.fanSignals)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		res, err := fanout.Run(rctx, fanout.Config{Name: "ng", Addr: p.addr, PID: p.pid,
			Subscribers: s.fanSubs, Signals: s.fanSignals, Channel: fmt.Sprintf("bench.fanout.r%d", rep)})
		cancel()
		if err != nil {
			fmt.Fprintln(s.stderr, "FAIL")
			return nil, fmt.Errorf("fan-out rep %d: %w", rep, err)
		}
		fmt.Fprintln(s.stderr, fanoutLine(res))
		out = append(out, *res)
	}
	return out, nil
}

// fanoutLine is the progress line of one repetition.
func fanoutLine(r *fanout.Result) string {
	var b strings.Builder
	for _, ph := range []struct {
		name string
		p    fanout.Phase
	}{{"clean", r.Clean}, {"slow", r.Slow}, {"after", r.After}} {
		fmt.Fprintf(&b, "%s: %d signals, push p50 %s p99 %s, last p50 %s, CPU/push %s; ", ph.name, ph.p.Signals,
			suite.FmtNs(float64(ph.p.Receipt.P50)), suite.FmtNs(float64(ph.p.Receipt.P99)),
			suite.FmtNs(float64(ph.p.Last.P50)), suite.FmtNs(float64(ph.p.CPUPerPush)))
	}
	fmt.Fprintf(&b, "slow capacity %d B, filled %d B, counted in %d replies", r.SlowCapacity, r.SlowFilled, r.SlowCounted)
	return b.String()
}
