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

// serveMain is the hidden "serve ceiling|baseline" mode the suite starts
// its reference servers with (pinned, as child processes).
func serveMain(args []string) int {
	if len(args) < 1 || (args[0] != "ceiling" && args[0] != "baseline") {
		fmt.Fprintln(os.Stderr, "usage: dflocksuite serve ceiling|baseline --addr host:port [--loops N] [--max-locks N]")
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	loops := fs.Int("loops", 1, "ceiling: event loops")
	maxLocks := fs.Int("max-locks", 1<<20, "baseline: distinct keys allowed")
	lifetime := fs.Duration("max-lifetime", 2*time.Hour, "exit after this long regardless")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var closeFn func() error
	if args[0] == "ceiling" {
		s, err := ceiling.Start(*addr, *loops)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		closeFn = s.Close
	} else {
		s, err := baseline.Start(*addr, baseline.Config{MaxLocks: *maxLocks, ReadTimeout: 10 * time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		closeFn = s.Close
	}
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
