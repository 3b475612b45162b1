//go:build !unix

package session

import "time"

// cpuTime is not measured here: benchmarks report no CPU time.
func cpuTime() time.Duration { return 0 }
