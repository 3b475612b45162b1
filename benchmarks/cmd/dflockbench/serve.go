package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/baseline"
	"github.com/dflockd-ng/dflockd/benchmarks/ceiling"
)

// serveMain is the hidden "serve ceiling|baseline" mode used for child
// processes: it starts the server, prints "listening <addr>" and runs until
// SIGTERM/SIGINT or --max-lifetime.
func serveMain(args []string) int {
	if len(args) < 1 || (args[0] != "ceiling" && args[0] != "baseline") {
		fmt.Fprintln(os.Stderr, "usage: dflockbench serve ceiling|baseline [--addr host:port] [--loops N] [--max-locks N]")
		return 2
	}
	kind := args[0]
	fs := flag.NewFlagSet("serve "+kind, flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	loops := fs.Int("loops", 0, "ceiling: event loops (0 = one per CPU)")
	maxLocks := fs.Int("max-locks", 1<<20, "baseline: distinct keys allowed")
	lifetime := fs.Duration("max-lifetime", 2*time.Hour, "exit after this long even if nobody says so")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var listen string
	var closeFn func() error
	switch kind {
	case "ceiling":
		s, err := ceiling.Start(*addr, *loops)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		listen, closeFn = s.Addr(), s.Close
	default:
		s, err := baseline.Start(*addr, baseline.Config{MaxLocks: *maxLocks})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		listen, closeFn = s.Addr(), s.Close
	}
	fmt.Printf("listening %s\n", listen)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	select {
	case <-sig:
	case <-time.After(*lifetime):
	}
	if err := closeFn(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
