package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// The README's flag table is the --help text; keep them identical so the
// documentation newcomers read first cannot drift from the code.
func TestReadmeFlagsMatchHelp(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- flags:begin -->\n```text\n", "```\n<!-- flags:end -->"
	i, j := bytes.Index(readme, []byte(begin)), bytes.Index(readme, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the flags block between %q and %q", strings.TrimSpace(begin), end)
	}
	var help, stderr bytes.Buffer
	if code := run([]string{"--help"}, &help, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("--help: exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
	if got := string(readme[i+len(begin) : j]); got != help.String() {
		t.Fatalf("README flags block differs from --help; regenerate it with:\n  go run ./cmd/dflockd --help")
	}
}
