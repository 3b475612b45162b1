package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// configurationPage holds the flag table: the page an operator looks a
// flag up in (issue #36 moved it out of the README).
const configurationPage = "../../docs/configuration.md"

// The documented flag table is the --help text; keep them identical so
// the page operators look flags up in cannot drift from the code.
func TestReadmeFlagsMatchHelp(t *testing.T) {
	page, err := os.ReadFile(configurationPage)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- flags:begin -->\n```text\n", "```\n<!-- flags:end -->"
	i, j := bytes.Index(page, []byte(begin)), bytes.Index(page, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the flags block between %q and %q", configurationPage, strings.TrimSpace(begin), end)
	}
	var help, stderr bytes.Buffer
	if code := run([]string{"--help"}, &help, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("--help: exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
	if got := string(page[i+len(begin) : j]); got != help.String() {
		t.Fatalf("%s's flags block differs from --help; regenerate it with:\n  go run ./cmd/dflockd --help", configurationPage)
	}
}
