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
	"os/signal"
	"strconv"
	"syscall"

	"github.com/dflockd-ng/dflockd/benchmarks/ceiling"
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
	fmt.Println("listening", s.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
