// Package version names a build of dflockd-ng: the release number of
// the tree it was built from (Number, the one source of truth, changed
// with a CHANGELOG.md section of the same number when a release is cut)
// and the VCS revision. dflockd --version, dflockctl version, the startup
// log line, dflockd_build_info and the header of a backup all read it
// here. It knows nothing of servers; its values are fixed at link time,
// so it is safe for concurrent use.
package version

import (
	"runtime/debug"
	"strings"
)

// Number is this tree's release number, semver (docs/upgrades.md says
// which releases may run side by side in one cluster).
const Number = "0.2.0"

// Stamped at link time by scripts/release.sh (-ldflags "-X
// github.com/dflockd-ng/dflockd/version.build=LABEL"): the name it gives
// the build (its VERSION argument, git describe by default). Left empty
// by a plain go build.
var build string

// Stamped at link time where go build cannot read the revision itself (a
// tree without .git, or -buildvcs=false): -X
// github.com/dflockd-ng/dflockd/version.revision=REV.
var revision string

// String is Number, followed by "+LABEL" (semver build metadata) when a
// release build was stamped with a label that is not the number itself
// ("v0.2.0" and "0.2.0" add nothing).
func String() string {
	b := strings.TrimPrefix(build, "v")
	if b == "" || b == Number {
		return Number
	}
	return Number + "+" + build
}

// Revision is the VCS revision the binary was built from: the stamped
// one, else the one go build recorded ("-dirty" when the tree had
// uncommitted changes), else "unknown" (go test, go run of a file, a
// build outside a checkout or with -buildvcs=false).
func Revision() string {
	if revision != "" {
		return revision
	}
	bi, ok := debug.ReadBuildInfo()
	return vcsRevision(bi, ok)
}

// vcsRevision reads the revision go build stamps into the binary.
func vcsRevision(bi *debug.BuildInfo, ok bool) string {
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
