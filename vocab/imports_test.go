package vocab

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestImportDirections keeps the shape this package exists for: the
// engine and the wire format share the vocabulary and know nothing of
// each other, and the vocabulary itself depends on nothing of ours.
func TestImportDirections(t *testing.T) {
	const mod = "github.com/dflockd-ng/dflockd/"
	imports := func(dir string) []string {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("reading the package in %s: %v", dir, err)
		}
		return p.Imports // non-test files only
	}
	for _, c := range []struct {
		dir      string
		mustNot  string
		whyNotOK string
	}{
		{"../engine", mod + "parse", "the engine gives requests meaning; the wire text is parse's"},
		{"../parse", mod + "engine", "parse turns bytes into vocab values and back; lock semantics are the engine's"},
	} {
		if slices.Contains(imports(c.dir), c.mustNot) {
			t.Errorf("%s imports %s: %s", c.dir, c.mustNot, c.whyNotOK)
		}
	}
	for _, imp := range imports(".") {
		if strings.HasPrefix(imp, mod) {
			t.Errorf("vocab imports %s: it must depend on no package of ours", imp)
		}
	}
}
