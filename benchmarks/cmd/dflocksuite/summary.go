package main

// The summary table at the top of PERF.md (suite.SummarySection) is built
// from the raw results files, not from this run's memory: so it is
// rewritten after every run, whatever workloads ran, and agrees with the
// generated sections below it, each of which shows its newest file.

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dflockd-ng/dflockd/benchmarks/suite"
)

// summaryMain is --summary-only: rewrite the summary from the results
// files on disk and run nothing else.
func summaryMain(s *runner, stderr io.Writer) int {
	if s.perfPath == "" || s.resultsDir == "" {
		repo, err := findRepo()
		if err != nil {
			fmt.Fprintln(stderr, "dflocksuite:", err)
			return 1
		}
		s.repo = repo
	}
	s.stderr = stderr
	if err := s.writeSummary(); err != nil {
		fmt.Fprintf(stderr, "dflocksuite: FAILED: %v\n", err)
		return 1
	}
	return 0
}

// writeSummary rebuilds PERF.md's summary section from --results, unless
// --no-write.
func (s *runner) writeSummary() error {
	if s.perfPath == "" {
		s.perfPath = filepath.Join(s.repo, "PERF.md")
	}
	if s.resultsDir == "" {
		s.resultsDir = filepath.Join(s.repo, "benchmarks", "results")
	}
	if s.noWrite {
		return nil
	}
	body, err := suite.WriteSummary(s.perfPath, s.resultsDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stderr, "\n%s\ndflocksuite: wrote %s (section %s) from %s\n", body, s.perfPath, suite.SummarySection.Begin, s.resultsDir)
	return nil
}

// commitOf is the repository's HEAD commit, "+dirty" when tracked files
// differ from it, or suite.Unknown without git (a prebuilt-binary host).
func commitOf(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return suite.Unknown
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		commit += "+dirty"
	}
	return commit
}
