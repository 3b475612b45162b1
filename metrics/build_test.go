package metrics

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dflockd-ng/dflockd/session"
	"github.com/dflockd-ng/dflockd/timerwheel"
)

// dflockd_build_info: 1, labelled with the version and profile given and
// the Go version and revision read from the binary.
func TestBuildInfo(t *testing.T) {
	hub := session.NewHub(session.Config{}, nil, timerwheel.NewMonoClock())
	reg := NewRegistry(Sources{Hub: hub, Build: Build{Version: "1.2.3", Profile: "rf"}})
	bi, ok := debug.ReadBuildInfo()
	want := `
# HELP dflockd_build_info Always 1; the labels describe the running binary: version, Go version, VCS revision (unknown when not built from a checkout), wire profile.
# TYPE dflockd_build_info gauge
dflockd_build_info{goversion="` + runtime.Version() + `",profile="rf",revision="` + revision(bi, ok) + `",version="1.2.3"} 1
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

// The revision go build stamps, marked when the tree was modified.
func TestRevision(t *testing.T) {
	stamped := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{}
		for i := 0; i+1 < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	for _, c := range []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "unknown"},
		{stamped(), true, "unknown"}, // go test, -buildvcs=false
		{stamped("vcs.revision", "77b6f10", "vcs.modified", "false"), true, "77b6f10"},
		{stamped("vcs", "git", "vcs.modified", "true", "vcs.revision", "9793d67"), true, "9793d67-dirty"},
	} {
		if got := revision(c.bi, c.ok); got != c.want {
			t.Errorf("revision(%v) = %q, want %q", c.bi, got, c.want)
		}
	}
}
