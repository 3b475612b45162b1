// Command ceiling runs the ceiling server (package ceiling) standalone: a
// gnet server with dflockd's framing and fixed replies, the upper bound for
// a gnet lock server on this machine. It prints "listening <host:port>" and
// serves until SIGINT or SIGTERM.
//
//	ceiling --host 127.0.0.1 --port 6390 --loops 2
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/dflockd-ng/dflockd/benchmarks/ceiling"
	"github.com/dflockd-ng/dflockd/benchmarks/child"
)

func main() {
	host := flag.String("host", "127.0.0.1", "listen host")
	port := flag.Int("port", 6390, "listen port (0 = any free port)")
	loops := flag.Int("loops", 0, "event loops (0 = one per CPU)")
	flag.Parse()
	s, err := ceiling.Start(net.JoinHostPort(*host, strconv.Itoa(*port)), *loops)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(child.RunUntilSignal(s.Addr(), s.Close, 0))
}
