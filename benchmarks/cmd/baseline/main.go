// Command baseline runs the baseline server (package baseline) standalone:
// a lock server with dflockd's own architecture (goroutine per connection,
// one global mutex), the reference where no dflockd is installed. It prints
// "listening <host:port>" and serves until SIGINT or SIGTERM.
//
//	baseline --host 127.0.0.1 --port 6391 --max-locks 1048576
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/baseline"
	"github.com/dflockd-ng/dflockd/benchmarks/child"
)

func main() {
	host := flag.String("host", "127.0.0.1", "listen host")
	port := flag.Int("port", 6391, "listen port (0 = any free port)")
	var cfg baseline.Config
	flag.IntVar(&cfg.MaxLocks, "max-locks", 1024, "distinct keys allowed (dflockd's default is 1024)")
	flag.DurationVar(&cfg.ReadTimeout, "read-timeout", 23*time.Second, "per-line read deadline")
	flag.DurationVar(&cfg.WriteTimeout, "write-timeout", 5*time.Second, "per-reply write deadline")
	flag.DurationVar(&cfg.DefaultLease, "default-lease", 33*time.Second, "lease when a request names none")
	flag.Parse()
	s, err := baseline.Start(net.JoinHostPort(*host, strconv.Itoa(*port)), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(child.RunUntilSignal(s.Addr(), s.Close, 0))
}
