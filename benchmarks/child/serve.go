package child

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

// ServeDefaults are the defaults a command gives its serve mode.
type ServeDefaults struct {
	Loops               int           // ceiling event loops (0 = one per CPU)
	BaselineReadTimeout time.Duration // 0 = the baseline's default (dflockd's 23 s)
}

// Serve is the hidden "serve ceiling|baseline" mode that the benchmark
// commands re-execute themselves with, so a reference server runs as its
// own process (pinned, with its CPU and memory measurable). It prints
// "listening <addr>" and runs until SIGTERM/SIGINT or --max-lifetime.
// prog names the command in the usage message; args follow "serve".
func Serve(prog string, args []string, d ServeDefaults) int {
	if len(args) < 1 || (args[0] != "ceiling" && args[0] != "baseline") {
		fmt.Fprintf(os.Stderr, "usage: %s serve ceiling|baseline [--addr host:port] [--loops N] [--max-locks N]\n", prog)
		return 2
	}
	fs := flag.NewFlagSet("serve "+args[0], flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	loops := fs.Int("loops", d.Loops, "ceiling: event loops (0 = one per CPU)")
	maxLocks := fs.Int("max-locks", 1<<20, "baseline: distinct keys allowed")
	lifetime := fs.Duration("max-lifetime", 2*time.Hour, "exit after this long even if nobody says so")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	var listen string
	var closeFn func() error
	if args[0] == "ceiling" {
		s, err := ceiling.Start(*addr, *loops)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		listen, closeFn = s.Addr(), s.Close
	} else {
		s, err := baseline.Start(*addr, baseline.Config{MaxLocks: *maxLocks, ReadTimeout: d.BaselineReadTimeout})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		listen, closeFn = s.Addr(), s.Close
	}
	return RunUntilSignal(listen, closeFn, *lifetime)
}

// RunUntilSignal prints "listening <addr>", waits for SIGTERM/SIGINT (or
// lifetime, when > 0), then closes the server; it returns an exit code.
func RunUntilSignal(addr string, closeFn func() error, lifetime time.Duration) int {
	fmt.Printf("listening %s\n", addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	var expire <-chan time.Time
	if lifetime > 0 {
		expire = time.After(lifetime)
	}
	select {
	case <-sig:
	case <-expire:
	}
	if err := closeFn(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
