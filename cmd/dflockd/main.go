// Command dflockd is the dflockd-ng server: a drop-in replacement for
// dflockd speaking its line protocol on TCP port 6388 by default.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"

	"github.com/dflockd-ng/dflockd/engine"
	"github.com/dflockd-ng/dflockd/fence"
	"github.com/dflockd-ng/dflockd/loop"
	"github.com/dflockd-ng/dflockd/parse"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so tests can drive it.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := LoadConfig(args, os.LookupEnv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "dflockd: %v\n", err)
		return 2
	}
	if cfg.ShowHelp {
		return 0
	}
	if cfg.ShowVersion {
		fmt.Fprintf(stdout, "dflockd-ng %s (%s)\n", version, runtime.Version())
		return 0
	}
	logger := log.New(stderr, "dflockd: ", log.LstdFlags|log.Lmicroseconds)
	debugf := func(string, ...any) {}
	if cfg.Debug {
		debugf = logger.Printf
	}

	fences := fence.NewVolatile()
	if cfg.FenceStateFile != "" {
		fences, err = fence.Open(cfg.FenceStateFile, fence.Options{Logf: logger.Printf})
		if err != nil {
			logger.Printf("cannot use fence state file: %v", err)
			return 1
		}
	}
	defer fences.Close()

	loops := cfg.Loops
	if loops == 0 {
		loops = runtime.NumCPU()
	}
	clock := timerwheel.NewMonoClock()
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	gdAddr := "" // godistlock listener, off by default
	if cfg.GodistlockPort != 0 {
		gdAddr = "tcp://" + net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.GodistlockPort))
		logger.Printf("godistlock clients on %s", gdAddr)
	}
	profile, _ := parse.ProfileNamed(cfg.Compat) // LoadConfig accepted it
	gcIdle := cfg.GCMaxIdle
	if gcIdle == 0 {
		gcIdle = -1 // engine: negative = prune as soon as idle
	}
	var srv *loop.Server
	srv = loop.New(loop.Config{
		Addr:            "tcp://" + addr,
		Loops:           loops,
		ReadTimeout:     cfg.ReadTimeout,
		WriteTimeout:    cfg.WriteTimeout,
		MaxConnections:  cfg.MaxConnections,
		AuthToken:       cfg.AuthToken,
		GCInterval:      cfg.GCInterval,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logf:            logger.Printf,
		Profile:         profile,
		GodistlockAddr:  gdAddr,
		Version:         "dflockd-ng/" + version,
		FenceStats:      func() *parse.FenceStat { return fenceStats(fences, srv.Engine()) },
		Engine: engine.Config{
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
		},
	}, clock)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		logger.Printf("%v: draining (shutdown timeout %v)", sig, cfg.ShutdownTimeout)
		if err := srv.Shutdown(context.Background()); err != nil {
			logger.Printf("shutdown: %v", err)
		}
	}()

	logger.Printf("dflockd-ng %s listening on %s (%d event loops)", version, addr, loops)
	debugf("config: %+v", redacted(cfg))
	if err := srv.Serve(); err != nil {
		logger.Printf("%v", err)
		return 1
	}
	logger.Printf("stopped")
	return 0
}

// fenceStats is the fence state of the stats document: the engine's last
// fence and the allocator's durable ceiling and persister counters.
func fenceStats(a *fence.Allocator, e *engine.Engine) *parse.FenceStat {
	st := a.Stats()
	fs := &parse.FenceStat{Last: e.LastFence(), Durable: st.Durable, Persists: st.Persists, Stalls: st.Stalls, Failed: st.Failed}
	if st.Durable {
		fs.Ceiling = st.Ceiling
	}
	return fs
}

// redacted hides the auth token from debug output.
func redacted(c Config) Config {
	if c.AuthToken != "" {
		c.AuthToken = "<redacted>"
	}
	return c
}
