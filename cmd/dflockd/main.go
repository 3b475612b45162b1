// Command dflockd is the dflockd-ng server: a drop-in replacement for
// dflockd speaking its line protocol on TCP port 6388 by default.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/httpapi"
	"github.com/dflockd-ng/dflockd/internal/conncap"
	"github.com/dflockd-ng/dflockd/internal/fdguard"
	"github.com/dflockd-ng/dflockd/internal/ratelog"
	"github.com/dflockd-ng/dflockd/netconn"
	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/version"
	"github.com/dflockd-ng/dflockd/vocab"
)

// Client incidents (failed auths, refused connections, protocol errors)
// are logged at most eventsPerSecond a second on average, eventsBurst at
// once; the rest are counted (internal/ratelog).
const (
	eventsPerSecond = 20
	eventsBurst     = 100
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	if code, ok := runCommand(args, stdout, stderr); ok { // version, help, completion (commands.go)
		return code
	}
	cfg, err := LoadConfig(args, os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dflockd: %v\n", err)
		return 2
	}
	if cfg.ShowHelp {
		writeUsage(stdout) // asked for: stdout, exit 0, as any Unix tool
		return 0
	}
	if cfg.ShowVersion {
		io.WriteString(stdout, versionLine())
		return 0
	}
	certs, err := loadTLS(cfg) // nil without TLS
	if err != nil {
		fmt.Fprintf(stderr, "dflockd: %v\n", err)
		return 2
	}
	if cfg.CPUProfile != "" {
		stop, err := startCPUProfile(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintf(stderr, "dflockd: %v\n", err)
			return 2
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "dflockd: cpu profile: %v\n", err)
			}
		}()
	}
	start := time.Now()
	log := newLogger(cfg, stderr)
	logf := func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
	events := ratelog.New(log, eventsPerSecond, eventsBurst)
	// Every listener goes through one guard: out of file descriptors, the
	// server keeps serving and refuses new connections until some close.
	guard := fdguard.New(log)
	defer guard.Close()
	warnDescriptors(log, cfg)

	fences := fence.NewVolatile()
	if cfg.FenceStateFile != "" {
		fences, err = fence.Open(cfg.FenceStateFile, fence.Options{Logf: logf})
		if err != nil {
			log.Error("cannot use the fence state file", "file", cfg.FenceStateFile, "error", err)
			return 1
		}
	}
	defer fences.Close()

	loops := cfg.Loops
	if loops == 0 {
		loops = runtime.NumCPU()
	}
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	binds := []string{addr}
	gdAddr := "" // godistlock listener, off by default
	if cfg.GodistlockPort != 0 {
		gdAddr = net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.GodistlockPort))
		binds = append(binds, gdAddr)
		gdAddr = "tcp://" + gdAddr
	}
	profile, _ := vocab.ProfileNamed(cfg.Compat) // LoadConfig accepted it
	ecfg := engineConfig(cfg, fences)
	limiter := &conncap.Limiter{Max: cfg.MaxConnections, PerIP: cfg.MaxConnsPerIP}
	ready := make(chan struct{})
	scfg := session.Config{
		Profile: profile, ReadTimeout: cfg.ReadTimeout, WriteTimeout: cfg.WriteTimeout,
		AuthToken: cfg.AuthToken, Version: "dflockd-ng/" + version.String(), Events: events, Policy: cfg.Policy,
	}

	// The HTTP API's listener is bound first, so that a bind error is
	// reported, as the others', before anything says listening.
	var httpL net.Listener
	if cfg.HTTP.Port != 0 {
		httpL, err = net.Listen("tcp", httpAddr(cfg))
		if err != nil {
			log.Error("cannot listen", "addr", httpAddr(cfg), "error", err)
			return 1
		}
		defer httpL.Close() // on the error returns below; the API closes it otherwise
		httpL = guard.Listener(httpL)
	}
	// The transports count requests for /metrics only when it is served.
	count := httpL != nil

	ln, err := startLine(lineParams{cfg: cfg, log: log, logf: logf, guard: guard, certs: certs, scfg: scfg, ecfg: ecfg,
		addr: addr, binds: binds, gdAddr: gdAddr, loops: loops, ready: ready,
		ncfg: netconn.Config{Limiter: limiter, Events: events, Logf: logf, Count: count}})
	if err != nil {
		var se *startError
		if errors.As(err, &se) {
			log.Error(se.msg, se.attrs...)
		} else {
			log.Error("cannot start", "error", err)
		}
		return 1
	}
	srv, hub, member, transport, conns := ln.srv, ln.hub, ln.member, ln.transport, ln.conns
	var api *httpapi.API
	if httpL != nil {
		api = newHTTPAPI(cfg, httpSources{hub: hub, member: member, profile: profile, fences: fences, certs: certs,
			transport: transport, conns: conns, start: start, logf: logf, guard: guard, log: log, events: events})
	}
	warnUnbounded(log, cfg)

	// One shutdown, whoever asks: a signal, or the HTTP API failing. The
	// line protocol's server drains first (spec §D.5): its Shutdown
	// drains the hub, so from then on /ready answers 503 and HTTP lock
	// calls 503 draining while the TCP connections end; the HTTP API is
	// shut down once Serve has returned, below.
	var shutdownOnce sync.Once
	shutdown := func() {
		shutdownOnce.Do(func() {
			if err := srv.Shutdown(context.Background()); err != nil {
				log.Error("shutdown", "error", err)
			}
		})
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		log.Info("draining", "signal", sig.String(), "shutdown_timeout", cfg.ShutdownTimeout.String())
		shutdown()
	}()

	// SIGHUP reloads what can be reloaded without dropping connections
	// (systemd's ExecReload); without this it would end the process. The
	// HTTP API reads the same certificate store.
	hups := make(chan os.Signal, 1)
	signal.Notify(hups, syscall.SIGHUP)
	go func() {
		for range hups {
			reloadTLS(log, certs)
			switch {
			case hub != nil:
				reloadPolicy(log, &cfg, hub)
			case member != nil:
				reloadPolicy(log, &cfg, member.hub)
			}
		}
	}()

	if hub != nil {
		hub.Start()
	}
	armFaults(log, srv)
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	httpFailed := make(chan error, 1)
	if api != nil {
		go func() {
			if err := api.Serve(httpL); err != nil {
				httpFailed <- err
			}
		}()
	}
	var httpErr error
	select {
	case <-ready:
		attrs := []any{"addr", addr, "loops", loops, "version", version.String(), "profile", cfg.Compat}
		if certs == nil && cfg.Cluster.RaftDir != "" && !cfg.Cluster.Loops {
			attrs = []any{"addr", addr, "version", version.String(), "profile", cfg.Compat} // netconn: no loops
		}
		if certs != nil {
			attrs = []any{"addr", addr, "tls", true, "version", version.String(), "profile", cfg.Compat}
			attrs = append(attrs, certAttrs(certs)...)
		}
		if gdAddr != "" {
			attrs = append(attrs, "godistlock_addr", binds[1])
		}
		if httpL != nil {
			attrs = append(attrs, "http_addr", httpL.Addr().String())
		}
		if cfg.Cluster.RaftDir != "" {
			attrs = append(attrs, clusterAttrs(&cfg.Cluster, certs != nil)...)
		}
		log.Info("listening", attrs...)
		log.Debug("config", "config", fmt.Sprintf("%+v", redacted(cfg)))
		select {
		case err = <-served:
		case httpErr = <-httpFailed:
			log.Error("serve HTTP", "error", httpErr)
			shutdown()
			err = <-served
		}
	case err = <-served:
	}
	if api != nil {
		// Every HTTP session is closed (its holds released as on a
		// disconnect), then the listener; requests still running get
		// until the shutdown timeout.
		ctx, cancel := shutdownContext(cfg.ShutdownTimeout)
		if e := api.Shutdown(ctx); e != nil {
			log.Error("shutdown HTTP", "error", e)
		}
		cancel()
	}
	if hub != nil {
		hub.Stop()
	}
	if err != nil {
		log.Error("serve", "error", err)
		return 1
	}
	if httpErr != nil {
		return 1
	}
	log.Info("stopped")
	return 0
}

// engineConfig is the engine's part of the configuration, the same for
// the gnet loops and TLS.
func engineConfig(cfg Config, fences *fence.Allocator) engine.Config {
	gcIdle := cfg.GCMaxIdle
	if gcIdle == 0 {
		gcIdle = -1 // engine: negative = prune as soon as idle
	}
	return engine.Config{
		DefaultLease:     cfg.DefaultLeaseTTL,
		MaxLocks:         cfg.MaxLocks,
		MaxWaiters:       cfg.MaxWaiters,
		KeepOnDisconnect: !cfg.AutoReleaseOnDisconnect,
		GCMaxIdle:        gcIdle,
		MaxKeys:          cfg.MaxKeys,
		MaxListLength:    cfg.MaxListLength,
		MaxSubscriptions: cfg.MaxSubscriptions,
		// Fences continue above the recovered ceiling (or the clock,
		// without a file), and each is reserved on disk first.
		FenceFloor: fences.Seed(),
		Ceiling:    fences,
		Events:     observatoryEvents(cfg),
	}
}

// newLogger is the server's log: --log-format text or json on w, at the
// debug level with --debug.
func newLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if cfg.Debug {
		opts.Level = slog.LevelDebug
	}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// redacted hides the auth token from debug output.
func redacted(c Config) Config {
	if c.AuthToken != "" {
		c.AuthToken = "<redacted>"
	}
	if c.Cluster.RaftToken != "" {
		c.Cluster.RaftToken = "<redacted>"
	}
	if c.Cluster.AdminToken != "" {
		c.Cluster.AdminToken = "<redacted>"
	}
	if c.HTTP.MetricsToken != "" {
		c.HTTP.MetricsToken = "<redacted>"
	}
	return c
}
