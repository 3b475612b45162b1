package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"

	"github.com/dflockd-ng/dflockd/benchmarks/child"
	"github.com/dflockd-ng/dflockd/benchmarks/loadgen"
)

// TLS targets: servers given by address (--tls-target, --tls-redis), whose
// clients trust --tls-ca or skip verification (--tls-insecure), and the two
// that dflockbench starts itself with one throw-away certificate, so that a
// single command compares them side by side:
//
//	dflockbench --with-ng-tls ./dflockd --with-redis-tls --workload lock --conns 50 --depth 1,16
//
// Both are child processes, measured like the others (CPU per pair, RSS),
// pinned with --server-cpus. Every connection's handshake happens while
// dialing, before the warm-up: the figures are those of established TLS
// sessions, as lock clients keep their connections.

// ngTLSFlags are the flags of a dflockd-ng started by --with-ng-tls: keys
// for every slot of a large run (conns × depth, as with --target).
var ngTLSFlags = []string{"--max-locks", "1048576"}

// assembleTLSTargets lists the TLS targets and starts the TLS servers the
// options ask for; stops stop what was started, even on error.
func assembleTLSTargets(ctx context.Context, o *options, stderr io.Writer) (targets []*target, stops []func(), err error) {
	add := func(name, addr string, proto loadgen.Protocol, pid int, cfg *tls.Config) {
		targets = append(targets, &target{name: name, addr: addr, proto: proto, pid: pid, tls: cfg})
	}
	if len(o.tlsTargets)+len(o.tlsRedis) > 0 {
		cfg, err := o.clientTLS()
		if err != nil {
			return nil, nil, err
		}
		for _, t := range o.tlsTargets {
			add(t.name, t.addr, loadgen.ProtoLine, o.pids[t.name], cfg)
		}
		for _, t := range o.tlsRedis {
			add(t.name, t.addr, loadgen.ProtoRedis, o.pids[t.name], cfg)
		}
	}
	if o.withNgTLS == "" && !o.withRedisTLS {
		return targets, nil, nil
	}
	dir, err := os.MkdirTemp("", "dflockbench-tls-")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() { os.RemoveAll(dir) })
	files, err := child.NewTLSFiles(dir)
	if err != nil {
		return nil, stops, err
	}
	if o.withNgTLS != "" {
		p, err := child.StartDflockdTLS(ctx, o.withNgTLS, files, o.serverCPUs, ngTLSFlags, stderr)
		if err != nil {
			return nil, stops, err
		}
		stops = append(stops, p.Stop)
		add("ng-tls", p.Addr, loadgen.ProtoLine, p.PID, files.ClientConfig())
	}
	if o.withRedisTLS {
		p, err := child.StartRedisTLS(ctx, o.redisServer, files, o.serverCPUs, stderr)
		if err != nil {
			return nil, stops, err
		}
		stops = append(stops, p.Stop)
		add("redis-tls", p.Addr, loadgen.ProtoRedis, p.PID, files.ClientConfig())
	}
	return targets, stops, nil
}

// clientTLS is the client configuration of --tls-target and --tls-redis.
func (o *options) clientTLS() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.tlsInsecure}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", o.tlsCA)
		}
	}
	return cfg, nil
}
