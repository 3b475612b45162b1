package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"os"

	"github.com/dflockd-ng/dflockd/benchmarks/baseline"
	"github.com/dflockd-ng/dflockd/benchmarks/ceiling"
	"github.com/dflockd-ng/dflockd/benchmarks/child"
	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// target is one server under test.
type target struct {
	name  string
	addr  string
	proto loadgen.Protocol
	pid   int         // process to measure; 0 = unknown or this process
	tls   *tls.Config // nil: plain TCP
}

// assembleTargets starts the servers the options ask for and lists every
// target. cleanup stops what was started; it is valid even on error.
func assembleTargets(ctx context.Context, o *options, stderr io.Writer) (targets []*target, cleanup func(), err error) {
	var stops []func()
	cleanup = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	add := func(name, addr string, proto loadgen.Protocol, pid int) {
		targets = append(targets, &target{name: name, addr: addr, proto: proto, pid: pid})
	}
	for _, t := range o.targets {
		add(t.name, t.addr, loadgen.ProtoLine, o.pids[t.name])
	}
	for _, t := range o.redis {
		add(t.name, t.addr, loadgen.ProtoRedis, o.pids[t.name])
	}
	if o.withCeiling {
		addr, pid, stop, err := startReference(ctx, o, "ceiling", stderr)
		if err != nil {
			return nil, cleanup, err
		}
		stops = append(stops, stop)
		add("ceiling", addr, loadgen.ProtoLine, pid)
	}
	if o.withBaseline {
		addr, pid, stop, err := startReference(ctx, o, "baseline", stderr)
		if err != nil {
			return nil, cleanup, err
		}
		stops = append(stops, stop)
		add("baseline", addr, loadgen.ProtoLine, pid)
	}
	if o.withRedis {
		p, err := child.StartRedis(ctx, o.redisServer, stderr)
		if err != nil {
			return nil, cleanup, err
		}
		stops = append(stops, p.Stop)
		add("redis", p.Addr, loadgen.ProtoRedis, p.PID)
	}
	tlsTargets, tlsStops, err := assembleTLSTargets(ctx, o, stderr)
	stops = append(stops, tlsStops...)
	targets = append(targets, tlsTargets...)
	return targets, cleanup, err
}

// startReference starts the ceiling or the baseline server on a free
// loopback port, as a child process (this binary's "serve" mode) or, with
// --inproc, in this process, where its CPU time cannot be told apart from
// the load generator's (pid 0).
func startReference(ctx context.Context, o *options, kind string, stderr io.Writer) (addr string, pid int, stop func(), err error) {
	if !o.inproc {
		exe, err := os.Executable()
		if err != nil {
			return "", 0, nil, err
		}
		args := []string{"serve", kind, "--addr", "127.0.0.1:0"}
		switch kind {
		case "ceiling":
			args = append(args, "--loops", fmt.Sprint(o.ceilingLoops))
		case "baseline":
			args = append(args, "--max-locks", fmt.Sprint(o.baselineLocks))
		}
		p, err := child.Start(ctx, kind, exe, args, stderr)
		if err != nil {
			return "", 0, nil, err
		}
		return p.Addr, p.PID, p.Stop, nil
	}
	switch kind {
	case "ceiling":
		s, err := ceiling.Start("127.0.0.1:0", o.ceilingLoops)
		if err != nil {
			return "", 0, nil, err
		}
		return s.Addr(), 0, func() { _ = s.Close() }, nil
	default:
		s, err := baseline.Start("127.0.0.1:0", baseline.Config{MaxLocks: o.baselineLocks})
		if err != nil {
			return "", 0, nil, err
		}
		return s.Addr(), 0, func() { _ = s.Close() }, nil
	}
}
