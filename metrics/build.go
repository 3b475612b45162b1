package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what dflockd_build_info says of the running binary besides
// the Go version, which it reads itself.
type Build struct {
	Version string // the release (cmd/dflockd's -X main.version)
	Profile string // --compat: v2, v1 or rf
}

// buildInfo is dflockd_build_info, the usual info gauge: always 1, its
// labels the facts, so that a query can join them onto any other series
// (… * on(instance) group_left(version) dflockd_build_info).
func buildInfo(b Build) prometheus.Collector {
	bi, ok := debug.ReadBuildInfo()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dflockd_build_info",
		Help: "Always 1; the labels describe the running binary: version, Go version, VCS revision (unknown when not built from a checkout), wire profile.",
		ConstLabels: prometheus.Labels{
			"version":   b.Version,
			"goversion": runtime.Version(),
			"revision":  revision(bi, ok),
			"profile":   b.Profile,
		},
	}, func() float64 { return 1 })
}

// revision is the VCS revision go build stamped into the binary, with
// "-dirty" when the tree had uncommitted changes; "unknown" when there is
// none (go test, go run of a file, a build outside a checkout or with
// -buildvcs=false).
func revision(bi *debug.BuildInfo, ok bool) string {
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}
