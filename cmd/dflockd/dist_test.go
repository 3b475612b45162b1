package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v2"
)

// The systemd unit passes systemd-analyze verify (with ExecStart pointed
// at a built binary, since verify checks that it exists).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	unit, err := os.ReadFile("../../dist/systemd/dflockd.service")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/dflockd", "ExecStart="+binary(t), 1)
	path := filepath.Join(t.TempDir(), "dflockd.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || strings.Contains(string(out), "dflockd.service") {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The release binaries (scripts/release.sh, run by CI into
// DFLOCKD_RELEASE_DIR with version DFLOCKD_RELEASE_VERSION) are static
// ELF executables of the right architecture, with the version stamped.
func TestReleaseBinaries(t *testing.T) {
	dir, version := os.Getenv("DFLOCKD_RELEASE_DIR"), os.Getenv("DFLOCKD_RELEASE_VERSION")
	if dir == "" || version == "" {
		t.Skip("DFLOCKD_RELEASE_DIR and DFLOCKD_RELEASE_VERSION unset: run scripts/release.sh first (CI does)")
	}
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		for _, cmd := range []string{"dflockd", "dflockctl"} {
			path := filepath.Join(dir, cmd+"-"+version+"-linux-"+arch)
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if f.Machine != machine {
				t.Errorf("%s: machine %v, want %v", path, f.Machine, machine)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Errorf("%s: dynamically linked (has an interpreter)", path)
				}
			}
			f.Close()
			if arch == "amd64" {
				out, err := exitingCommand(t, path, "--version").CombinedOutput()
				if err != nil || !strings.Contains(string(out), version) {
					t.Errorf("%s --version: %v %q, want the version %q", path, err, out, version)
				}
			}
		}
	}
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS-"+version))
	if err != nil || strings.Count(string(sums), "\n") != 4 {
		t.Errorf("SHA256SUMS: %v %q", err, sums)
	}
}

// The alerting rules in dist/prometheus.
const (
	alertsFile     = "../../dist/prometheus/dflockd-alerts.yml"
	alertTestsFile = "../../dist/prometheus/dflockd-alerts.test.yml"
	runbookFile    = "../../docs/runbook.md"
	runbookURL     = "https://github.com/dflockd-ng/dflockd/blob/main/docs/runbook.md#"
)

// alertRule is one rule of a Prometheus rule file, as far as the tests
// read it.
type alertRule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Annotations map[string]string `yaml:"annotations"`
}

func readAlertRules(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []alertRule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	var rules []alertRule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s: no rules", alertsFile)
	}
	return rules
}

// promtool's own checks of the rules (syntax, templates) and of their unit
// tests (dflockd-alerts.test.yml), when Debian's prometheus package (or
// any promtool) is installed; .ci/run installs it.
func TestDistAlertRulesPromtool(t *testing.T) {
	promtool := lookPromtool(t)
	for _, args := range [][]string{{"check", "rules", alertsFile}, {"test", "rules", alertTestsFile}} {
		out, err := exitingCommand(t, promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// lookPromtool returns promtool's path, or skips the test saying why.
func lookPromtool(t *testing.T) string {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus; .ci/run installs it): not checked")
	}
	return promtool
}

// Every alert links to its own section of docs/runbook.md, and has unit
// tests in which it fires and in which it does not (promtool runs them;
// this checks that none is left out).
func TestDistAlertRunbookAndTests(t *testing.T) {
	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for line := range strings.Lines(string(runbook)) {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "#"))] = true
		}
	}
	b, err := os.ReadFile(alertTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `yaml:"alertname"`
				ExpAlerts []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("%s: %v", alertTestsFile, err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range readAlertRules(t) {
		if r.Alert == "" {
			t.Errorf("a recording rule (%q) in the alerts file", r.Expr)
			continue
		}
		if seen[r.Alert] {
			t.Errorf("%s: defined twice", r.Alert)
		}
		seen[r.Alert] = true
		url := r.Annotations["runbook_url"]
		anchor, ok := strings.CutPrefix(url, runbookURL)
		switch {
		case !ok:
			t.Errorf("%s: runbook_url %q, want %s<anchor>", r.Alert, url, runbookURL)
		case anchor != strings.ToLower(r.Alert):
			t.Errorf("%s: runbook anchor %q, want its own section, %q", r.Alert, anchor, strings.ToLower(r.Alert))
		case !anchors[anchor]:
			t.Errorf("%s: docs/runbook.md has no heading with the anchor %q", r.Alert, anchor)
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: no summary or description", r.Alert)
		}
		if !fires[r.Alert] || !silent[r.Alert] {
			t.Errorf("%s: its unit tests want it firing: %v, silent: %v; want both", r.Alert, fires[r.Alert], silent[r.Alert])
		}
	}
	for name := range fires {
		if !seen[name] {
			t.Errorf("%s: tested but not defined", name)
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading: lower case,
// spaces to hyphens, punctuation dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
