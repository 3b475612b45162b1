package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile starts Go's CPU profiler, writing to path from now until
// the returned stop runs (at the end of run, after the drain). It is how
// PERF.md's profiles of a server under the suite's load are taken: the
// profile covers the whole run, but an idle server adds no samples, so it
// shows where the load's CPU went. The file is created (truncated) first,
// so a path that cannot be written fails the start, not the stop.
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}
