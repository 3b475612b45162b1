package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// maxFileLines is the size past which a file holds more than one idea
// (design/style.md: files of one idea, rarely over ~800 lines).
const maxFileLines = 800

// No non-test source file of this command grows past maxFileLines:
// config.go once held the flag table, the loading and the usage together.
func TestLayoutFilesOfOneIdea(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, over %d: split it into files named for what they hold", f, n, maxFileLines)
		}
	}
}

// .ci/run's header names every package the script installs, so whoever
// runs it knows what it will do to the machine (issue #23).
func TestLayoutCIHeaderNamesInstalls(t *testing.T) {
	b, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Skipf("no .ci/run: %v", err)
	}
	var header []string
	for _, l := range strings.Split(string(b), "\n")[1:] { // after the #! line
		if !strings.HasPrefix(l, "#") {
			break
		}
		header = append(header, l)
	}
	head := strings.Join(header, "\n")
	installs := regexp.MustCompile(`apt-get install -y -qq (\S+)`).FindAllStringSubmatch(string(b), -1)
	if len(installs) == 0 {
		t.Fatal(".ci/run installs nothing with apt-get: this test is out of date")
	}
	for _, m := range installs {
		if !regexp.MustCompile(`(?m)^#\s+` + regexp.QuoteMeta(m[1]) + `\s`).MatchString(head) {
			t.Errorf(".ci/run installs %s but its header does not list it with its reason:\n%s", m[1], head)
		}
	}
	if strings.Contains(head, "Needs only") {
		t.Errorf(".ci/run's header still claims it needs only some tools:\n%s", head)
	}
}
