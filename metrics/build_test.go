package metrics

import (
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// dflockd_build_info: 1, labelled with the version, revision and profile
// given and the Go version read from the binary.
func TestBuildInfo(t *testing.T) {
	hub := session.NewHub(session.Config{}, nil, timerwheel.NewMonoClock())
	reg := NewRegistry(Sources{Hub: hub, Build: Build{Version: "1.2.3", Revision: "9793d67", Profile: "rf"}})
	want := `
# HELP dflockd_build_info Always 1; the labels describe the running binary: version, Go version, VCS revision (unknown when not built from a checkout), wire profile.
# TYPE dflockd_build_info gauge
dflockd_build_info{goversion="` + runtime.Version() + `",profile="rf",revision="9793d67",version="1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "dflockd_build_info"); err != nil {
		t.Fatal(err)
	}
	// Without a version (a registry of no server), no build info.
	reg = NewRegistry(Sources{Hub: hub})
	if n, err := testutil.GatherAndCount(reg, "dflockd_build_info"); err != nil || n != 0 {
		t.Fatalf("build info without a version: %d, %v", n, err)
	}
}
