package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what dflockd_build_info says of the running binary besides
// the Go version, which it reads itself.
type Build struct {
	Version  string // the release (package version's String)
	Revision string // the VCS revision ("" reads as unknown)
	Profile  string // --compat: v2, v1 or rf
}

// buildInfo is dflockd_build_info, the usual info gauge: always 1, its
// labels the facts, so that a query can join them onto any other series
// (… * on(instance) group_left(version) dflockd_build_info).
func buildInfo(b Build) prometheus.Collector {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dflockd_build_info",
		Help: "Always 1; the labels describe the running binary: version, Go version, VCS revision (unknown when not built from a checkout), wire profile.",
		ConstLabels: prometheus.Labels{
			"version":   b.Version,
			"goversion": runtime.Version(),
			"revision":  rev,
			"profile":   b.Profile,
		},
	}, func() float64 { return 1 })
}
