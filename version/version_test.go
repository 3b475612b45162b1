package version

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// semver is a release number: MAJOR.MINOR.PATCH, no pre-release (a
// release names itself; a label goes after "+").
var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func TestNumberIsSemver(t *testing.T) {
	if !semver.MatchString(Number) {
		t.Fatalf("Number %q is not MAJOR.MINOR.PATCH", Number)
	}
}

// Every number has its CHANGELOG.md section: a release cut without one
// fails here.
func TestChangelogNamesNumber(t *testing.T) {
	b, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n## ["+Number+"]") {
		t.Fatalf("CHANGELOG.md has no section \"## [%s]\"", Number)
	}
}

func TestString(t *testing.T) {
	defer func(b string) { build = b }(build)
	for _, c := range []struct{ build, want string }{
		{"", Number},
		{Number, Number},
		{"v" + Number, Number},
		{"ci-check", Number + "+ci-check"},
		{"55aaea7-dirty", Number + "+55aaea7-dirty"},
	} {
		build = c.build
		if got := String(); got != c.want {
			t.Errorf("build %q: String() = %q, want %q", c.build, got, c.want)
		}
	}
}

// The revision go build stamps, marked when the tree was modified; a
// stamped one wins.
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
		if got := vcsRevision(c.bi, c.ok); got != c.want {
			t.Errorf("vcsRevision(%v) = %q, want %q", c.bi, got, c.want)
		}
	}
	defer func(r string) { revision = r }(revision)
	revision = "abc123"
	if got := Revision(); got != "abc123" {
		t.Errorf("stamped revision: Revision() = %q", got)
	}
}
