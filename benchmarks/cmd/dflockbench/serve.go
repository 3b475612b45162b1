package main

import "github.com/dflockd-ng/dflockd/benchmarks/child"

// serveMain runs a reference server as a child process (see child.Serve).
func serveMain(args []string) int {
	return child.Serve("dflockbench", args, child.ServeDefaults{})
}
