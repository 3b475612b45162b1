package main

import (
	"time"

	"github.com/dflockd-ng/dflockd/benchmarks/child"
)

// serveMain runs a reference server as a pinned child process (see
// child.Serve): one loop for the ceiling, and a baseline read timeout long
// enough for the memory scenarios' idle connections.
func serveMain(args []string) int {
	return child.Serve("dflocksuite", args, child.ServeDefaults{Loops: 1, BaselineReadTimeout: 10 * time.Minute})
}
